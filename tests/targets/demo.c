// SPDX-License-Identifier: MIT
/*
 * The sample `make demo` traces: two threads parsing and evaluating small arithmetic
 * expressions by recursive descent, so the trace has real nesting, recursion and threads.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

struct parser {
	const char *p;
};

static long parse_expr(struct parser *ps);

static void skip_spaces(struct parser *ps)
{
	while (*ps->p == ' ')
		ps->p++;
}

static long parse_number(struct parser *ps)
{
	long v = 0;

	skip_spaces(ps);
	while (*ps->p >= '0' && *ps->p <= '9')
		v = v * 10 + (*ps->p++ - '0');
	return v;
}

static long parse_factor(struct parser *ps)
{
	long v;

	skip_spaces(ps);
	if (*ps->p == '(') {
		ps->p++;
		v = parse_expr(ps);
		skip_spaces(ps);
		if (*ps->p == ')')
			ps->p++;
		return v;
	}
	return parse_number(ps);
}

static long parse_term(struct parser *ps)
{
	long v = parse_factor(ps);

	for (skip_spaces(ps); *ps->p == '*' || *ps->p == '/'; skip_spaces(ps)) {
		char op = *ps->p++;
		long r = parse_factor(ps);

		v = op == '*' ? v * r : (r ? v / r : 0);
	}
	return v;
}

static long parse_expr(struct parser *ps)
{
	long v = parse_term(ps);

	for (skip_spaces(ps); *ps->p == '+' || *ps->p == '-'; skip_spaces(ps)) {
		char op = *ps->p++;
		long r = parse_term(ps);

		v = op == '+' ? v + r : v - r;
	}
	return v;
}

long evaluate(const char *text)
{
	struct parser ps = { text };

	return parse_expr(&ps);
}

static void *worker(void *arg)
{
	static const char *const exprs[] = { "1 + 2 * 3", "(4 + 5) * (6 - 1)", "((2 * (3 + 4)) - 5) / 3" };
	long *sum = arg;

	for (int i = 0; i < 3; i++)
		*sum += evaluate(exprs[i]);
	return NULL;
}

int main(void)
{
	pthread_t t;
	long a = 0, b = 0;

	pthread_create(&t, NULL, worker, &a);
	worker(&b);
	pthread_join(t, NULL);
	printf("demo: %ld %ld\n", a, b);
	return a == b ? 0 : 1;
}
