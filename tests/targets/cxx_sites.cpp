// SPDX-License-Identifier: MIT
/*
 * cxx_sites: C++ exceptions thrown through functions that record --call-sites redirects. The
 * cs_* functions are written in assembly (with their unwind information) so that their first
 * instruction is a `mov` the kernel single-steps, whatever the compiler: their direct calls are
 * redirected to call-site stubs. One round i:
 *   cs_a(i) -> cs_b -> cs_c -> cx_raise      cx_raise throws unless i % 4 == 3; caught in the
 *                                            round: cs_a, cs_b, cs_c are unwound
 *   cs_m(i) -> cx_catcher -> cs_b -> cs_c    caught in cx_catcher (the middle): cs_b and cs_c
 *                                            are unwound, cs_m lives on; cx_catcher then
 *                                            calls cs_after, and cs_m returns normally
 *   cs_ra()                                  returns its own return address: outside the
 *                                            program's text when its call went through a stub
 *
 *   cxx_sites all N           N rounds; prints "caught C returned R sum S"
 *   cxx_sites threads T N     T threads released together, N rounds each; the same line, summed
 *   cxx_sites busy N          thread W calls cs_hold, which blocks (inside a redirected call)
 *                             until the main thread has done N rounds, then returns, and W
 *                             does one round itself; prints the line and "hold H"
 *   cxx_sites after           for record -p: prints "ready", calls rounds until SIGUSR1; then
 *                             thread W calls cs_hold, prints "inside" once W is blocked in it,
 *                             and at SIGUSR2 W's wait throws through cs_hold (a frame entered
 *                             through a stub during the session, thrown through after it);
 *                             prints "after: caught C" (C = 1)
 * On stderr: "ra_outside K in MAPPING", the calls of cs_ra whose return address was not in the
 * program's text, and the mapping of the last one (a call-site stub's memfd, the kernel's
 * [uprobes] page of a uretprobe).
 * Exit 0 only if every result was right.
 */
#include <pthread.h>
#include <signal.h>
#include <unistd.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

extern "C" {
int cs_a(int x);
int cs_b(int x);
int cs_c(int x);
int cs_m(int x);
int cs_hold(int x);
uintptr_t cs_ra(void);
int cx_raise(int x);
int cx_catcher(int x);
int cx_wait(int x);
void cs_after(int x);
extern char __executable_start[], etext[];
}

/* a traced function that calls the next one: mov first, then a call with a 16-byte aligned sp */
#define CS_CHAIN(name, next, add)                                                       \
	".globl " #name "\n.type " #name ",@function\n" #name ":\n"                     \
	"	.cfi_startproc\n"                                                       \
	"	mov %edi, %eax\n"                                                       \
	"	sub $8, %rsp\n	.cfi_adjust_cfa_offset 8\n"                             \
	"	mov %eax, %edi\n"                                                       \
	"	call " #next "\n"                                                       \
	"	add $8, %rsp\n	.cfi_adjust_cfa_offset -8\n"                            \
	"	add $" #add ", %eax\n"                                                  \
	"	ret\n"                                                                  \
	"	.cfi_endproc\n.size " #name ", .-" #name "\n"

__asm__(".text\n"
	CS_CHAIN(cs_a, cs_b, 1)
	CS_CHAIN(cs_b, cs_c, 2)
	CS_CHAIN(cs_c, cx_raise, 4)
	CS_CHAIN(cs_m, cx_catcher, 8)
	CS_CHAIN(cs_hold, cx_wait, 16)
	".globl cs_after\n.type cs_after,@function\ncs_after:\n"
	"	.cfi_startproc\n	mov %edi, %eax\n	ret\n	.cfi_endproc\n.size cs_after, .-cs_after\n"
	".globl cs_ra\n.type cs_ra,@function\ncs_ra:\n"
	"	.cfi_startproc\n	mov (%rsp), %rax\n	ret\n	.cfi_endproc\n.size cs_ra, .-cs_ra\n");

int cx_raise(int x)
{
	if (x % 4 != 3)
		throw std::runtime_error("thrown through redirected calls");
	return x;
}

int cx_catcher(int x)
{
	int r;

	try {
		r = cs_b(x);
	} catch (const std::runtime_error &) {
		r = -1;
	}
	cs_after(x);
	return r;
}

struct tally {
	long caught, returned, sum, outside;
	uintptr_t ra;           /* the last return address of cs_ra outside the text */
	bool bad;
};

static void round_of(int i, struct tally *t)
{
	uintptr_t ra;
	int r;

	try {
		r = cs_a(i);
		t->returned++;
		t->sum += r;
		t->bad |= r != i + 7;
	} catch (const std::runtime_error &) {
		t->caught++;
	}
	r = cs_m(i);
	t->sum += r;
	t->bad |= r != (i % 4 == 3 ? i + 6 + 8 : -1 + 8);
	ra = cs_ra();
	if (ra < (uintptr_t)__executable_start || ra >= (uintptr_t)etext) {
		t->outside++;
		t->ra = ra;
	}
}

static void rounds(int n, struct tally *t)
{
	for (int i = 0; i < n; i++)
		round_of(i, t);
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static bool inside, released, throw_after_wait;
static pthread_barrier_t start_together;
static int per_thread;

/* called by cs_hold: says it is inside, blocks until the main thread releases it */
int cx_wait(int x)
{
	pthread_mutex_lock(&mu);
	inside = true;
	pthread_cond_broadcast(&cv);
	while (!released)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	if (throw_after_wait)
		throw std::runtime_error("thrown through cs_hold");
	return x;
}

static void *worker(void *arg)
{
	struct tally *t = (struct tally *)arg;

	pthread_barrier_wait(&start_together);
	rounds(per_thread, t);
	return nullptr;
}

static void *holder(void *arg)
{
	struct tally *t = (struct tally *)arg;
	int r = cs_hold(5);

	t->bad |= r != 5 + 16;
	t->sum += r;
	round_of(3, t);         /* returns normally */
	round_of(4, t);         /* throws */
	return nullptr;
}

/* the mapping @addr lies in: its path, "[name]", or "-" */
static void mapping_of(uintptr_t addr, char *out, size_t size)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[4096];

	snprintf(out, size, "-");
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		int pos = 0;

		if (sscanf(line, "%lx-%lx %*s %*x %*x:%*x %*u %n", &lo, &hi, &pos) < 2 || !pos ||
		    addr < lo || addr >= hi)
			continue;
		line[strcspn(line, "\n")] = 0;
		snprintf(out, size, "%s", line[pos] ? line + pos : "-");
		break;
	}
	if (f)
		fclose(f);
}

static volatile sig_atomic_t got_usr1, got_usr2;

static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		got_usr1 = 1;
	else
		got_usr2 = 1;
}

static void *thrower_after(void *arg)
{
	long *caught = (long *)arg;

	try {
		cs_hold(5);
	} catch (const std::runtime_error &) {
		++*caught;
	}
	return nullptr;
}

/* the "after" mode (see the top): waits for the signals of the test that drives it */
static int after_session(void)
{
	struct tally t = {};
	long caught = 0;
	pthread_t th;
	int i = 0;

	signal(SIGUSR1, on_signal);
	signal(SIGUSR2, on_signal);
	printf("ready\n");
	fflush(stdout);
	while (!got_usr1)
		round_of(i++ % 64, &t);
	throw_after_wait = true;
	if (pthread_create(&th, nullptr, thrower_after, &caught))
		return 2;
	pthread_mutex_lock(&mu);
	while (!inside)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	printf("inside\n");
	fflush(stdout);
	while (!got_usr2)
		usleep(1000);
	pthread_mutex_lock(&mu);
	released = true;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	pthread_join(th, nullptr);
	printf("after: caught %ld\n", caught);
	return caught == 1 && !t.bad ? 0 : 1;
}

static int report(const struct tally *t, int n)
{
	char where[4096];

	printf("caught %ld returned %ld sum %ld\n", t->caught, t->returned, t->sum);
	mapping_of(t->ra, where, sizeof(where));
	fprintf(stderr, "ra_outside %ld in %s\n", t->outside, t->outside ? where : "-");
	return t->bad || t->caught + t->returned != n ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "all";
	struct tally all = {};

	if (!strcmp(mode, "all") && argc > 2) {
		int n = atoi(argv[2]);

		rounds(n, &all);
		return report(&all, n);
	}
	if (!strcmp(mode, "threads") && argc > 3) {
		int nt = atoi(argv[2]);
		pthread_t th[16];
		struct tally t[16] = {};

		if (nt < 1 || nt > 16)
			return 2;
		per_thread = atoi(argv[3]);
		pthread_barrier_init(&start_together, nullptr, (unsigned)nt);
		for (int k = 0; k < nt; k++)
			if (pthread_create(&th[k], nullptr, worker, &t[k]))
				return 2;
		for (int k = 0; k < nt; k++) {
			pthread_join(th[k], nullptr);
			all.caught += t[k].caught;
			all.returned += t[k].returned;
			all.sum += t[k].sum;
			all.outside += t[k].outside;
			all.ra = t[k].ra ? t[k].ra : all.ra;
			all.bad |= t[k].bad;
		}
		return report(&all, nt * per_thread);
	}
	if (!strcmp(mode, "busy") && argc > 2) {
		int n = atoi(argv[2]);
		struct tally w = {};
		pthread_t th;

		if (pthread_create(&th, nullptr, holder, &w))
			return 2;
		pthread_mutex_lock(&mu);
		while (!inside)
			pthread_cond_wait(&cv, &mu);
		pthread_mutex_unlock(&mu);
		rounds(n, &all);        /* throws while W is inside cs_hold */
		pthread_mutex_lock(&mu);
		released = true;
		pthread_cond_broadcast(&cv);
		pthread_mutex_unlock(&mu);
		pthread_join(th, nullptr);
		printf("hold %ld\n", w.sum);
		all.caught += w.caught;
		all.returned += w.returned;
		all.outside += w.outside;
		all.ra = w.ra ? w.ra : all.ra;
		all.bad |= w.bad;
		return report(&all, n + 2);
	}
	if (!strcmp(mode, "after"))
		return after_session();
	fprintf(stderr, "usage: cxx_sites all N | threads T N | busy N | after\n");
	return 2;
}
