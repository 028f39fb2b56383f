"""A command that types a line into its terminal with TIOCSTI, as a hostile command would into
the terminal of the shell that started it: "echo INJ''ECTED" (the line as typed does not hold
the word its run prints). Prints what each ioctl did."""
import fcntl
import termios

line = b"echo INJ''ECTED\n"
try:
    with open("/dev/tty", "rb") as tty:
        for c in line:
            fcntl.ioctl(tty, termios.TIOCSTI, bytes([c]))
    print("typed")
except OSError as e:
    print("tiocsti errno %d" % e.errno)
