// The pty_agent.py conversation with tty_probe.py, driven by node-pty (Gemini CLI's
// interactive shell spawns its commands this way). argv: the node-pty module's directory, then
// the probe's command line (NODE_PATH is not a name runnerd passes to an agent).
const [where, cmd, ...args] = process.argv.slice(2);
const pty = require(where);

const p = pty.spawn(cmd, args, {cols: 80, rows: 24, env: process.env, cwd: process.cwd()});
let out = '';
const steps = [
	['resize me', () => p.resize(101, 33)],
	['type a line', () => p.write('hello there\r')],
	['now ^C', () => setTimeout(() => p.write('\x03'), 200)],
];
p.onData((d) => {
	out += d;
	while (steps.length && out.includes(steps[0][0]))
		steps.shift()[1]();
});
p.onExit(({exitCode, signal}) => {
	const ended = signal ? 'signal ' + signal : 'status ' + exitCode;
	process.stdout.write(out.replace(/\r\n/g, '\n') + 'ended: ' + ended + '\n');
	process.exit(0);
});
setTimeout(() => {
	process.stdout.write(out + 'ended: timeout\n');
	process.exit(1);
}, 20000);
