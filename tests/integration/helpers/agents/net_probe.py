
import socket, sys
port = int(sys.argv[1])
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
c = socket.socket(); c.settimeout(3)
try:
    c.connect(("127.0.0.1", port)); print("host=reached")
except OSError:
    print("host=unreachable")
print("lo=up")
