// SPDX-License-Identifier: MIT
/*
 * atf_raw [-d] THREAD_DIR: one thread's ATF v2 files decoded from their raw bytes, for the e2e tests.
 *
 * Written from the format's specification (ATF v2, with the reference readers' index footer of
 * reserved[24] and detail header of 64 bytes) and docs/detail-payload.md, and on purpose sharing
 * no code with libatf (no project header, no codec, no reader): a bug in libatf's reader cannot
 * hide a bug in its writer here. Every size and offset is checked before it is read.
 *
 * Prints
 *   index tid TID events N flags F arch A os O clock C t0 T0 t1 T1 crc ok
 *   ev SEQ KIND FUNCTION_ID DEPTH DETAIL_SEQ TS           KIND: C, R or X; DETAIL_SEQ - for none
 *   detail records N                                       (only when detail.atf exists)
 *   reg SEQ INDEX_SEQ C|R FLAGS FUNCTION_ID gp G0,..,G7 lr LR fp FP sp SP stack S [strings K]
 *   (K: the strings of the typed-argument block after the stack, each bounds-checked)
 * with the registers in hex, or in decimal with -d.
 * and exits 1 with "bad: ..." at the first thing that breaks the format.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned long long ull;

static const uint8_t *buf;
static const char *regfmt = "%llx";
static size_t len;
static const char *what;

static void bad(const char *fmt, ull a, ull b)
{
	printf("bad: %s: ", what);
	printf(fmt, a, b);
	printf("\n");
	exit(1);
}

static uint64_t le(size_t off, unsigned n)
{
	uint64_t v = 0;

	if (off > len || n > len - off)
		bad("read of %llu bytes at %llu beyond the end", n, off);
	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)buf[off + i] << (8 * i);
	return v;
}

static void magic(size_t off, const char *m)
{
	if (off > len || len - off < 4 || memcmp(buf + off, m, 4))
		bad("no magic at %llu%.0llu", off, 0);
}

/* CRC-32/ISO-HDLC, bit by bit: check value 0xCBF43926 for "123456789". */
static uint32_t crc32_bits(const uint8_t *p, size_t n)
{
	uint32_t c = 0xFFFFFFFFu;

	for (size_t i = 0; i < n; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1)));
	}
	return ~c;
}

static uint8_t *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	uint8_t *p = NULL;
	size_t cap = 0, got = 0, r;

	if (!f)
		return NULL;
	do {
		if (got == cap) {
			cap = cap ? cap * 2 : 1 << 16;
			uint8_t *np = realloc(p, cap);
			if (!np)
				exit(2);
			p = np;
		}
		r = fread(p + got, 1, cap - got, f);
		got += r;
	} while (r);
	fclose(f);
	*n = got;
	return p;
}

static char kind_char(uint64_t k)
{
	return k == 1 ? 'C' : k == 2 ? 'R' : k == 3 ? 'X' : '?';
}

int main(int argc, char **argv)
{
	char path[4096];
	uint8_t *ibuf, *dbuf;
	size_t ilen, dlen;
	uint64_t count, ev_off, foot, ndetail, d_off, d_bytes, seq;

	if (argc == 3 && !strcmp(argv[1], "-d")) {
		regfmt = "%llu";
		argv++, argc--;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: atf_raw [-d] THREAD_DIR\n");
		return 2;
	}
	snprintf(path, sizeof(path), "%s/index.atf", argv[1]);
	ibuf = slurp(path, &ilen);
	if (!ibuf) {
		fprintf(stderr, "atf_raw: %s: %s\n", path, strerror(errno));
		return 2;
	}
	buf = ibuf, len = ilen, what = "index.atf";
	/* header: 64 bytes */
	magic(0, "ATI2");
	if (le(4, 1) != 1 || le(5, 1) != 1)
		bad("endian %llu version %llu", le(4, 1), le(5, 1));
	if (le(24, 4) != 32)
		bad("event_size %llu%.0llu", le(24, 4), 0);
	count = le(28, 4);
	ev_off = le(32, 8);
	foot = le(40, 8);
	if (ev_off != 64 || foot != ev_off + count * 32 || foot + 64 != len)
		bad("events_offset/footer_offset %llu/%llu do not fit the file", ev_off, foot);
	/* footer: 2ITA, crc, count, t0, t1, bytes_written, reserved[24] */
	magic(foot, "2ITA");
	if (le(foot + 8, 8) != count || le(foot + 32, 8) != count * 32)
		bad("footer count %llu, header %llu", le(foot + 8, 8), count);
	if (le(foot + 4, 4) != crc32_bits(buf + ev_off, count * 32))
		bad("footer CRC %llx, events hash to %llx", le(foot + 4, 4), crc32_bits(buf + ev_off, count * 32));
	if (le(foot + 16, 8) != le(48, 8) || le(foot + 24, 8) != le(56, 8))
		bad("footer times differ from the header's%.0llu%.0llu", 0, 0);
	printf("index tid %llu events %llu flags %llu arch %llu os %llu clock %llu t0 %llu t1 %llu crc ok\n",
	       (ull)le(12, 4), (ull)count, (ull)le(8, 4), (ull)le(6, 1), (ull)le(7, 1), (ull)le(16, 1),
	       (ull)le(48, 8), (ull)le(56, 8));
	for (seq = 0; seq < count; seq++) {
		size_t o = ev_off + seq * 32;
		uint64_t ds = le(o + 28, 4);

		if (le(o + 16, 4) != le(12, 4))
			bad("event %llu: thread_id %llu differs from the header's", seq, le(o + 16, 4));
		if (seq == 0 && le(o, 8) != le(48, 8))
			bad("first event at %llu, header time_start %llu", le(o, 8), le(48, 8));
		if (seq == count - 1 && le(o, 8) != le(56, 8))
			bad("last event at %llu, header time_end %llu", le(o, 8), le(56, 8));
		printf("ev %llu %c 0x%016llx %llu ", (ull)seq, kind_char(le(o + 20, 4)), (ull)le(o + 8, 8),
		       (ull)le(o + 24, 4));
		if (ds == 0xFFFFFFFFu)
			printf("- %llu\n", (ull)le(o, 8));
		else
			printf("%llu %llu\n", (ull)ds, (ull)le(o, 8));
	}

	snprintf(path, sizeof(path), "%s/detail.atf", argv[1]);
	dbuf = slurp(path, &dlen);
	if (!dbuf) {
		if (errno != ENOENT) {
			fprintf(stderr, "atf_raw: %s: %s\n", path, strerror(errno));
			return 2;
		}
		free(ibuf);
		return 0;
	}
	buf = dbuf, len = dlen, what = "detail.atf";
	/* header: ATD2, endian, version, arch, os, flags, thread_id, _r, events_offset@20,
	 * event_count@28, bytes_length@36, index_seq_start@44, index_seq_end@52, _reserved2@60 */
	magic(0, "ATD2");
	if (le(12, 4) != ((uint64_t)ibuf[12] | (uint64_t)ibuf[13] << 8 | (uint64_t)ibuf[14] << 16 |
			  (uint64_t)ibuf[15] << 24))
		bad("thread_id %llu differs from the index's%.0llu", le(12, 4), 0);
	d_off = le(20, 8);
	ndetail = le(28, 8);
	d_bytes = le(36, 8);
	if (d_off != 64 || d_off + d_bytes + 64 != len)
		bad("events_offset %llu + bytes_length %llu do not fit the file", d_off, d_bytes);
	magic(d_off + d_bytes, "2DTA");
	if (le(d_off + d_bytes + 8, 8) != ndetail || le(d_off + d_bytes + 16, 8) != d_bytes)
		bad("footer count %llu, header %llu", le(d_off + d_bytes + 8, 8), ndetail);
	if (le(d_off + d_bytes + 4, 4) != crc32_bits(buf + d_off, d_bytes))
		bad("footer CRC %llx, records hash to %llx", le(d_off + d_bytes + 4, 4), crc32_bits(buf + d_off, d_bytes));
	printf("detail records %llu\n", (ull)ndetail);
	size_t o = d_off;
	for (seq = 0; seq < ndetail; seq++) {
		uint64_t total = le(o, 4), type = le(o + 4, 2), iseq = le(o + 8, 4), ss;
		size_t p = o + 24, io;

		if (total < 24 + 100 || total > d_off + d_bytes - o)
			bad("record %llu: total_length %llu", seq, total);
		if (type != 3 && type != 4)
			bad("record %llu: event_type %llu", seq, type);
		if (iseq >= count)
			bad("record %llu: index_seq %llu beyond the index", seq, iseq);
		io = 64 + iseq * 32;
		buf = ibuf, len = ilen;
		uint64_t back = le(io + 28, 4), its = le(io, 8), ifid = le(io + 8, 8), ikind = le(io + 20, 4);
		buf = dbuf, len = dlen;
		if (back != seq || its != le(o + 16, 8) || ifid != le(p, 8) || ikind != type - 2)
			bad("record %llu and index event %llu do not link both ways", seq, iseq);
		ss = le(p + 96, 2);
		if (24 + 100 + ss > total)
			bad("record %llu: stack_size %llu is past the record", seq, ss);
		/* what follows the stack: only atftrace's string block, "ATAS" (docs/detail-payload.md) */
		size_t xo = o + 24 + 100 + ss, xend = o + total, nstr = 0;

		if (xo < xend) {
			if (xend - xo < 8 || memcmp(buf + xo, "ATAS", 4) || le(xo + 6, 2) != 0)
				bad("record %llu: %llu bytes after the stack that are no string block", seq,
				    (ull)(xend - xo));
			nstr = le(xo + 4, 2);
			xo += 8;
			for (size_t i = 0; i < nstr; i++) {
				if (xend - xo < 4 || xend - xo - 4 < le(xo + 2, 2))
					bad("record %llu: string %llu is past the record", seq, (ull)i);
				xo += 4 + le(xo + 2, 2);
			}
			if (xo != xend)
				bad("record %llu: the string block ends %llu bytes short of the record", seq, (ull)(xend - xo));
		}
		printf("reg %llu %llu %c %llu 0x%016llx gp ", (ull)seq, (ull)iseq, type == 3 ? 'C' : 'R',
		       (ull)le(o + 6, 2), (ull)le(p, 8));
		for (int r = 0; r < 11; r++) {
			static const char *const sep[11] = { "", ",", ",", ",", ",", ",", ",", ",", " lr ", " fp ", " sp " };

			fputs(sep[r], stdout);
			printf(regfmt, (ull)le(p + 8 + 8 * r, 8));
		}
		printf(" stack %llu", (ull)ss);
		if (nstr)
			printf(" strings %zu", nstr);
		printf("\n");
		o += total;
	}
	if (o != d_off + d_bytes)
		bad("records end at %llu, bytes_length says %llu", o, d_off + d_bytes);
	free(ibuf);
	free(dbuf);
	return 0;
}
