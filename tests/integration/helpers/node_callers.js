#!/usr/bin/env node
// Node.js as the caller: each sub-case starts commands through child_process the way Node
// programs (and agents written in Node) do, and prints what it observed.
// Usage: node node_callers.js CASE
'use strict';

const cp = require('child_process');

const cases = {
	spawnsync_status() {
		const r = cp.spawnSync('sh', ['-c', 'exit 9']);
		console.log('status', r.status, 'signal', r.signal, 'error', r.error);
		const k = cp.spawnSync('sh', ['-c', 'kill -KILL $$']);
		console.log('killed: status', k.status, 'signal', k.signal);
		try {
			cp.execFileSync('sh', ['-c', 'echo partial; exit 3'], { stdio: 'pipe' });
		} catch (e) {
			console.log('execFileSync threw: status', e.status, 'stdout', JSON.stringify(String(e.stdout)));
		}
	},

	spawnsync_input() {
		const r = cp.spawnSync('tr', ['a-z', 'A-Z'], { input: 'hello from node\n' });
		console.log('status', r.status, 'stdout', JSON.stringify(r.stdout.toString()));
		const big = 'x'.repeat(1 << 20);
		const w = cp.spawnSync('wc', ['-c'], { input: big });
		console.log('wc of 1 MiB input:', w.stdout.toString().trim(), 'status', w.status);
	},

	spawnsync_inherit() {
		const r = cp.spawnSync('sh', ['-c', 'echo inherited-out; echo inherited-err >&2; exit 2'], {
			stdio: 'inherit',
		});
		console.log('status', r.status);
	},

	spawn_2m() {
		const c = cp.spawn('sh', ['-c', "head -c 2097152 /dev/zero | tr '\\0' a"]);
		let n = 0;
		let other = 0;
		c.stdout.on('data', (d) => {
			n += d.length;
			for (const b of d) if (b !== 0x61) other++;
		});
		c.on('close', (code, signal) => {
			console.log('bytes', n, 'non-a', other, 'code', code, 'signal', signal);
		});
	},

	ipc() {
		const c = cp.spawn(process.execPath, ['-e', 'process.send({ x: 1 }); process.disconnect();'], {
			stdio: ['pipe', 'pipe', 'pipe', 'ipc'],
		});
		c.on('message', (m) => console.log('message', JSON.stringify(m)));
		c.stderr.on('data', (d) => process.stderr.write(d));
		c.on('close', (code, signal) => console.log('close', code, signal));
	},

	fork_ipc() {
		// child_process.fork of this file: the child talks back over the IPC channel.
		const c = cp.fork(__filename, ['fork_child']);
		c.on('message', (m) => console.log('message', JSON.stringify(m)));
		c.on('exit', (code, signal) => console.log('exit', code, signal));
		c.send({ hello: 'child' });
	},

	fork_child() {
		process.on('message', (m) => {
			process.send({ echo: m, connected: process.connected });
			process.disconnect();
		});
	},

	exec_shell() {
		cp.exec('echo $0; echo err >&2; exit 4', (err, stdout, stderr) => {
			const code = err && err.code;
			console.log('code', code, 'stdout', JSON.stringify(stdout), 'stderr', JSON.stringify(stderr));
		});
	},

	spawn_missing() {
		const c = cp.spawn('rd-no-such-command-xyz', ['a']);
		c.on('error', (e) => console.log('error', e.code, e.errno, e.syscall, e.path));
		c.on('close', (code, signal) => console.log('close', code, signal));
	},

	kill_sigterm() {
		const c = cp.spawn('sh', ['-c', 'echo ready; exec sleep 30']);
		c.stdout.once('data', (d) => {
			console.log('child says', JSON.stringify(d.toString()));
			console.log('kill returned', c.kill('SIGTERM'));
		});
		c.on('exit', (code, signal) => console.log('exit', code, signal));
		c.on('close', (code, signal) => console.log('close', code, signal));
	},

	kill_immediately() {
		const c = cp.spawn('sleep', ['30']);
		console.log('kill returned', c.kill('SIGKILL'));
		c.on('exit', (code, signal) => console.log('exit', code, signal));
	},

	detached() {
		const code = 'import os; print(os.getsid(0) == os.getpid(), os.getpgid(0) == os.getpid())';
		const py = process.argv[3] || 'python3';
		const r = cp.spawnSync(py, ['-c', code], { detached: true });
		console.log('detached: sid_is_pid, pgid_is_pid:', r.stdout.toString().trim(), 'status', r.status);
	},
};

const name = process.argv[2];
if (!cases[name]) {
	console.error('usage: node_callers.js CASE; cases: ' + Object.keys(cases).join(' '));
	process.exit(2);
}
cases[name]();
