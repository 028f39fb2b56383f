/* System calls without libc: each returns the kernel's value, >= 0 on success or -errno on
 * failure, and touches no errno. For runnerd-stub, which has no libc, and for the reaper while
 * its command, in the memory (and so the errno) it shares with it, is not exec'd yet. Needs
 * nothing but the compiler. */
#ifndef RD_RAW_SYSCALL_H
#define RD_RAW_SYSCALL_H

#if defined(__x86_64__)
/* The syscall instruction clobbers rcx (return rip) and r11 (rflags). */
static inline long sys6(long n, long a, long b, long c, long d, long e, long f)
{
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	long ret;

	__asm__ volatile("syscall"
	                 : "=a"(ret)
	                 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
	                 : "rcx", "r11", "memory");
	return ret;
}
#elif defined(__aarch64__)
static inline long sys6(long n, long a, long b, long c, long d, long e, long f)
{
	register long x8 __asm__("x8") = n;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	register long x3 __asm__("x3") = d;
	register long x4 __asm__("x4") = e;
	register long x5 __asm__("x5") = f;

	__asm__ volatile("svc #0"
	                 : "+r"(x0)
	                 : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
	                 : "memory");
	return x0;
}
#endif

#define sys0(n)                sys6((n), 0, 0, 0, 0, 0, 0)
#define sys1(n, a)             sys6((n), (long)(a), 0, 0, 0, 0, 0)
#define sys2(n, a, b)          sys6((n), (long)(a), (long)(b), 0, 0, 0, 0)
#define sys3(n, a, b, c)       sys6((n), (long)(a), (long)(b), (long)(c), 0, 0, 0)
#define sys4(n, a, b, c, d)    sys6((n), (long)(a), (long)(b), (long)(c), (long)(d), 0, 0)
#define sys5(n, a, b, c, d, e) sys6((n), (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), 0)

#endif
