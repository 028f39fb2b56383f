#!/usr/bin/env bash
# A stand-in for an AI agent: it runs the commands a prompt injection would ask for, each as a
# child process, and prints what each one saw. Run plainly and under runnerd by demo.sh.
has() { if [ -n "${!1:-}" ]; then echo set; else echo "not set"; fi; }
echo "agent: my own key (ANTHROPIC_API_KEY): $(has ANTHROPIC_API_KEY)"
echo "agent: OpenAI's key (OPENAI_API_KEY): $(has OPENAI_API_KEY)"
echo '$ env | grep KEY|TOKEN|URL'
env | grep -E 'KEY|TOKEN|URL' | sed 's/=.*/=.../' | sort || true
echo '$ cat /proc/$PPID/environ | grep KEY'
sh -c 'tr "\0" "\n" < /proc/$PPID/environ | grep -c KEY' 2>&1 | sed 's/^/matches: /'
echo '$ ps -e | wc -l'
ps -e --no-headers | wc -l | sed 's/^ */processes: /'
echo '$ sh -c "echo my pid is \$\$; exit 3"; echo $?'
sh -c 'echo my pid is $$; exit 3'
echo "status: $?"
