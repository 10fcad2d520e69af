// SPDX-License-Identifier: MIT
/*
 * libcxxthrow.so: a C++ library with a C interface, for C programs (cxx_c_main links against
 * it, cxx_dlopen dlopens it). lib_catch(i, through) calls through(i) in a try block; through
 * is the C program's own function, which calls lib_thrower_b -> lib_thrower_c, which throws:
 * the exception unwinds lib_thrower_c, lib_thrower_b and the C caller, and is caught in
 * lib_catch. Returns 1 when it was caught.
 */
#include <stdexcept>

extern "C" {
volatile int lib_sink;

__attribute__((noinline)) void lib_thrower_c(int i)
{
	lib_sink += i;
	if (lib_sink >= 0)
		throw std::runtime_error("thrown through a C frame");
}

__attribute__((noinline)) void lib_thrower_b(int i)
{
	lib_thrower_c(i);
	lib_sink++;
}

__attribute__((noinline)) int lib_catch(int i, void (*through)(int))
{
	try {
		through(i);
	} catch (const std::runtime_error &) {
		return 1;
	}
	return 0;
}
}
