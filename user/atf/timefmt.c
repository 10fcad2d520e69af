// SPDX-License-Identifier: MIT
/* The shared time syntax: parse and display (timefmt.h). Integer arithmetic only. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "timefmt.h"

/* Longer suffixes before their prefixes ("ms" before "m"); rank orders a compound's terms. */
static const struct {
	const char *suffix;
	uint64_t ns;
	int rank;
} units[] = {
	{ "ns", 1, 0 }, { "us", 1000, 1 }, { "\u00b5s", 1000, 1 }, { "\u03bcs", 1000, 1 },
	{ "ms", 1000000, 2 }, { "s", 1000000000, 3 }, { "m", 60000000000ull, 4 }, { "h", 3600000000000ull, 5 },
};

/*
 * One term, DIGITS [. DIGITS] [UNIT], from *@pp: its value in *@ns and its unit's rank in *@rank
 * (-1 for a bare number, in @bare_unit_ns). Advances *@pp past it.
 */
static int parse_term(const char **pp, uint64_t bare_unit_ns, uint64_t *ns, int *rank)
{
	uint64_t whole = 0, frac = 0, frac_scale = 1, mult = 0, v;
	const char *p = *pp;

	if (!isdigit((unsigned char)*p))
		return -EINVAL;
	for (; isdigit((unsigned char)*p); p++) {
		uint64_t d = (uint64_t)(*p - '0');

		if (whole > (UINT64_MAX - d) / 10)
			return -ERANGE;
		whole = whole * 10 + d;
	}
	if (*p == '.') {
		if (!isdigit((unsigned char)*++p))
			return -EINVAL;
		for (; isdigit((unsigned char)*p); p++)
			if (frac_scale < 1000000000000ull) {    /* finer than 1 ns in any unit: dropped */
				frac = frac * 10 + (uint64_t)(*p - '0');
				frac_scale *= 10;
			}
	}
	*rank = -1;
	if (!*p)
		mult = bare_unit_ns;
	for (size_t i = 0; !mult && i < sizeof(units) / sizeof(units[0]); i++) {
		size_t n = strlen(units[i].suffix);

		if (!strncmp(p, units[i].suffix, n) && (!p[n] || isdigit((unsigned char)p[n]))) {
			mult = units[i].ns;
			*rank = units[i].rank;
			p += n;
		}
	}
	if (!mult)
		return -EINVAL;
	if (whole > UINT64_MAX / mult)
		return -ERANGE;
	v = whole * mult;
	/* frac < frac_scale <= 1e12 and mult <= 3.6e12: the product needs 128 bits. */
	frac = (uint64_t)((unsigned __int128)frac * mult / frac_scale);
	if (v > UINT64_MAX - frac)
		return -ERANGE;
	*ns = v + frac;
	*pp = p;
	return 0;
}

int timefmt_parse(const char *s, uint64_t bare_unit_ns, uint64_t *ns)
{
	uint64_t sum = 0, v;
	const char *p = s;
	int rank, last_rank = 99, err, terms = 0;

	if (!s)
		return -EINVAL;
	do {
		if ((err = parse_term(&p, bare_unit_ns, &v, &rank)))
			return err;
		/* 1m30s: each term in a smaller unit than the one before; a bare number stands alone */
		if ((rank < 0 && terms) || rank >= last_rank)
			return -EINVAL;
		if (sum > UINT64_MAX - v)
			return -ERANGE;
		sum += v;
		last_rank = rank;
		terms++;
	} while (*p);
	*ns = sum;
	return 0;
}

const char *timefmt_strerror(int err)
{
	if (err == -ERANGE)
		return "too large (at most 18446744073709551615 ns, about 584 years)";
	return "expected a time such as 1500, 20us (or 20\u00b5s), 1.5ms, 2s, 1m or 1m30s";
}

char *timefmt_format(char *buf, size_t len, uint64_t ns)
{
	static const struct { const char *name; uint64_t ns; } steps[] = {
		{ "s", 1000000000 }, { "ms", 1000000 }, { "us", 1000 },
	};

	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
		if (ns >= steps[i].ns) {
			uint64_t milli = steps[i].ns / 1000;    /* one thousandth of the unit */

			snprintf(buf, len, "%llu.%03llu %s", (unsigned long long)(ns / steps[i].ns),
				 (unsigned long long)(ns % steps[i].ns / milli), steps[i].name);
			return buf;
		}
	snprintf(buf, len, "%llu ns", (unsigned long long)ns);
	return buf;
}
