import fcntl, termios
try:
    fcntl.ioctl(open('/dev/tty'), termios.TIOCSTI, b'x'); print('tiocsti=typed')
except OSError as e:
    print('tiocsti=errno', e.errno)
