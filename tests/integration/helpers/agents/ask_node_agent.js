
const { spawn, execFileSync } = require("child_process");
const fs = require("fs");
const tmp = process.argv[2];
let ticks = 0;
const timer = setInterval(() => {
  ticks++;
  if (ticks === 5) fs.writeFileSync(tmp + "/node-ticking", "");
}, 20);
const p = spawn("expr", ["3", "+", "4"]);
let out = "";
p.stdout.on("data", (d) => (out += d));
p.on("close", (code) => {
  clearInterval(timer);
  console.log(JSON.stringify({ code, out: out.trim(), ticks }));
});
