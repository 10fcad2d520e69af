// SPDX-License-Identifier: MIT
/*
 * gen_session: write a synthetic ATF v2 process directory for tests and benchmarks.
 *
 *   gen_session -o DIR [--threads N] [--calls N] [--depth D] [--recursion R] [--detail]
 *               [--detail-every K] [--stack-bytes B] [--seed S] [--events TOTAL] [--corrupt MODE]
 *
 *   -o DIR            process directory to create (DIR/manifest.json, DIR/thread_<i>/...)
 *   --threads N       threads (default 3); thread 0 is "main" (root frame main), the others
 *                     "worker-<i>" (root frame worker_loop); tids are pid 4242 + i
 *   --calls N         top-level calls under each thread's root frame (default 4)
 *   --depth D         maximum depth of a call tree below the root (default 3)
 *   --recursion R     a call tree may contain fib recursing R levels deep (default 3; 0 = none)
 *   --detail          record detail (registers + stack) on every Kth CALL/RETURN event
 *   --detail-every K  K for --detail (default 3)
 *   --stack-bytes B   stack bytes per detail record, 0..256 (default 32)
 *   --seed S          seed of the deterministic generator (default 1): same options, same bytes
 *   --events TOTAL    approximate total events instead of --calls (big benchmark sessions;
 *                     10M events take a few seconds)
 *   --corrupt MODE    damage the result so verify fails (all in thread_0 unless said otherwise):
 *        crc              flip a bit in an index event        -> "events CRC ..."
 *        truncate         cut index.atf mid-record, no footer (detail.atf too when its last
 *                         record belongs to the cut event)    -> "no valid footer"; recover fixes it
 *        no-footer        drop index.atf's footer             -> "no valid footer"; recover fixes it
 *        time-order       an event earlier than its predecessor -> "is before the previous event"
 *        bad-magic        index magic "XXXX"                  -> "magic is not ATI2"
 *        nesting          a return one level too deep         -> "but its call was at depth"
 *        dangling-link    detail_seq past the detail file     -> "dangling detail_seq"
 *        unknown-function a call of an id not in the manifest -> "not in the manifest symbols"
 *        count            header event_count + 1              -> "event_count"
 *        manifest         "threads" key renamed               -> "\"threads\": missing"
 *   CRCs are recomputed after event edits, so each mode fails with its own message.
 *
 * Content: timestamps are boottime-like (~1e12 ns), threads interleave, call trees nest with
 * recursion and an occasional frame left by unwinding (EXCEPTION). Two modules; symbols include
 * a C++ mangled name (with demangled form), one with a quote and a backslash, and one with a
 * non-UTF-8 byte. Detail payloads are x86_64 (NOTES.md §6), linked both ways by the writer.
 * On success prints "gen_session: DIR: N threads, N events, N detail events".
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "atf.h"
#include "byteorder.h"

typedef unsigned long long ull;

enum fn { F_MAIN, F_PARSE, F_EVAL, F_FIB, F_CXX, F_QUOTE, F_BADUTF8, F_WORKER, F_ALLOC, F_FREE, F_HASH, F_COUNT };

static const struct {
	int module;                 /* 0: executable, 1: library */
	uint32_t index;
	const char *name, *demangled;
} functions[F_COUNT] = {
	[F_MAIN] = { 0, 1, "main", NULL },
	[F_PARSE] = { 0, 2, "parse_expr", NULL },
	[F_EVAL] = { 0, 3, "eval_node", NULL },
	[F_FIB] = { 0, 4, "fib", NULL },
	[F_CXX] = { 0, 5, "_ZN3foo3Bar6methodEi", "foo::Bar::method(int)" },
	[F_QUOTE] = { 0, 6, "quote\"back\\slash", NULL },
	[F_BADUTF8] = { 0, 7, "bad\xffname", NULL },
	[F_WORKER] = { 0, 8, "worker_loop", NULL },
	[F_ALLOC] = { 1, 1, "lib_alloc", NULL },
	[F_FREE] = { 1, 2, "lib_free", NULL },
	[F_HASH] = { 1, 3, "lib_hash", NULL },
};
static const char *const module_paths[2] = { "/usr/bin/gen_target", "/usr/lib/x86_64-linux-gnu/libgen.so.1" };
static const enum fn leaf_choices[] = { F_PARSE, F_EVAL, F_CXX, F_QUOTE, F_BADUTF8, F_ALLOC, F_FREE, F_HASH };

#define GEN_PID 4242u
#define GEN_BASE_NS 1000000000000ull

struct opts {
	const char *out;
	unsigned threads, calls, depth, recursion, detail_every, stack_bytes;
	bool detail;
	uint64_t seed, events;
	const char *corrupt;
};

struct gen {
	const struct opts *o;
	struct atf_thread_writer *w;
	uint64_t rng, ts, nevents, ndetail;
	uint64_t payload_rng;       /* separate, so --detail does not change the call trees */
	uint32_t tid;
	uint64_t fids[F_COUNT];
	uint8_t payload[ATF_DETAIL_PAYLOAD_SIZE + ATF_DETAIL_MAX_STACK];
	int err;
};

static uint64_t xorshift(uint64_t *state)
{
	*state ^= *state >> 12;
	*state ^= *state << 25;
	*state ^= *state >> 27;
	return *state * 0x2545F4914F6CDD1Dull;
}

static uint64_t rnd(struct gen *g)
{
	return xorshift(&g->rng);
}

static uint64_t prnd(struct gen *g)
{
	return xorshift(&g->payload_rng);
}

static void emit(struct gen *g, uint32_t kind, enum fn f, uint32_t depth)
{
	struct atf_index_event ev = { .function_id = g->fids[f], .thread_id = g->tid, .event_kind = kind,
				      .call_depth = depth };
	struct atf_detail_in din, *dp = NULL;
	int64_t r;

	if (g->err)
		return;
	g->ts += 20 + rnd(g) % 2000;
	ev.timestamp_ns = g->ts;
	if (g->o->detail && kind != ATF_KIND_EXCEPTION && g->nevents % g->o->detail_every == g->o->detail_every - 1) {
		struct atf_detail_payload p = { .function_id = ev.function_id, .stack_size = (uint16_t)g->o->stack_bytes };

		for (int i = 0; i < ATF_DETAIL_GP_REGS; i++)
			p.gp[i] = kind == ATF_KIND_CALL || i < 2 ? prnd(g) >> (i * 4) : 0;
		p.lr = 0x401000 + prnd(g) % 0x1000;
		p.fp = 0x7ffd00000000ull + (prnd(g) % 0x10000) * 16;
		p.sp = p.fp - 0x40;
		atf_detail_payload_encode(g->payload, &p);
		for (unsigned i = 0; i < g->o->stack_bytes; i++)
			g->payload[ATF_DETAIL_PAYLOAD_SIZE + i] = (uint8_t)prnd(g);
		din = (struct atf_detail_in){ .event_type = kind == ATF_KIND_CALL ? ATF_DETAIL_CALL : ATF_DETAIL_RETURN,
					      .flags = kind == ATF_KIND_CALL ? ATF_DETAIL_F_STACK_ARGS : 0,
					      .payload = g->payload,
					      .payload_len = ATF_DETAIL_PAYLOAD_SIZE + g->o->stack_bytes };
		dp = &din;
	}
	r = atf_thread_writer__append(g->w, &ev, dp);
	if (r < 0) {
		g->err = (int)r;
		return;
	}
	g->nevents++;
	g->ndetail += dp != NULL;
}

static void gen_recursion(struct gen *g, uint32_t depth, unsigned levels)
{
	emit(g, ATF_KIND_CALL, F_FIB, depth);
	if (levels > 1)
		gen_recursion(g, depth + 1, levels - 1);
	emit(g, ATF_KIND_RETURN, F_FIB, depth);
}

/* One call tree at @depth, at most @left levels deep. */
static void gen_tree(struct gen *g, uint32_t depth, unsigned left)
{
	enum fn f = leaf_choices[rnd(g) % (sizeof(leaf_choices) / sizeof(leaf_choices[0]))];

	emit(g, ATF_KIND_CALL, f, depth);
	if (left > 1) {
		unsigned children = (unsigned)(rnd(g) % 3);

		for (unsigned i = 0; i < children; i++)
			gen_tree(g, depth + 1, left - 1);
	}
	if (g->o->recursion && rnd(g) % 4 == 0)
		gen_recursion(g, depth + 1, g->o->recursion);
	/* Now and then a frame is left by unwinding (caught by its caller). */
	emit(g, rnd(g) % 16 == 0 ? ATF_KIND_EXCEPTION : ATF_KIND_RETURN, f, depth);
}

static int gen_thread(const struct opts *o, struct atf_manifest *m, unsigned i, uint64_t *tmin, uint64_t *tmax,
		      uint64_t *events, uint64_t *details)
{
	struct gen *g = calloc(1, sizeof(*g));
	struct atf_thread_info *ti;
	char name[32];
	enum fn root = i ? F_WORKER : F_MAIN;
	int err;

	if (!g)
		return -ENOMEM;
	g->o = o;
	g->rng = (o->seed + 1) * 0x9E3779B97F4A7C15ull + i * 0xBF58476D1CE4E5B9ull;
	g->payload_rng = g->rng ^ 0xD1B54A32D192ED03ull;
	g->ts = GEN_BASE_NS + (uint64_t)i * 700;
	g->tid = GEN_PID + i;
	for (int f = 0; f < F_COUNT; f++)
		g->fids[f] = (uint64_t)atf_module_id(module_paths[functions[f].module]) << 32 | functions[f].index;
	err = atf_thread_writer__new(&g->w, o->out, i, g->tid);
	if (err)
		goto cleanup;
	emit(g, ATF_KIND_CALL, root, 0);
	if (o->events) {
		uint64_t quota = o->events / o->threads;

		while (!g->err && g->nevents + 1 < quota)
			gen_tree(g, 1, o->depth);
	} else {
		for (unsigned c = 0; c < o->calls && !g->err; c++)
			gen_tree(g, 1, o->depth);
	}
	emit(g, ATF_KIND_RETURN, root, 0);
	err = g->err ?: atf_thread_writer__finalize(g->w);
	if (err)
		goto cleanup;
	snprintf(name, sizeof(name), i ? "worker-%u" : "main", i);
	ti = atf_manifest__add_thread(m, i, g->tid, name);
	if (!ti) {
		err = -ENOMEM;
		goto cleanup;
	}
	ti->ns_tid = g->tid;
	ti->has_detail = g->ndetail > 0;
	ti->index_events = g->nevents;
	ti->detail_events = g->ndetail;
	*tmin = atf_thread_writer__time_start(g->w) < *tmin ? atf_thread_writer__time_start(g->w) : *tmin;
	*tmax = atf_thread_writer__time_end(g->w) > *tmax ? atf_thread_writer__time_end(g->w) : *tmax;
	*events += g->nevents;
	*details += g->ndetail;
cleanup:
	atf_thread_writer__free(g->w);
	free(g);
	return err;
}

static int build_manifest(struct atf_manifest *m)
{
	static const char *const argv[] = { "gen_target", "--input", "say \"hi\"\\n" };
	bool ok = true;

	m->pid = m->ns_pid = GEN_PID;
	m->process_name = strdup("gen_target");
	m->kernel = strdup("6.18.0-gen");
	m->host = strdup("genhost");
	m->atftrace_version = strdup("gen_session");
	m->start_time = strdup("2024-01-01T00:00:00Z");
	m->end_reason = strdup("target exited");
	m->argv = calloc(3, sizeof(char *));
	ok = m->process_name && m->kernel && m->host && m->atftrace_version && m->start_time && m->end_reason && m->argv;
	for (size_t i = 0; ok && i < 3; i++, m->argc++)
		ok = (m->argv[i] = strdup(argv[i])) != NULL;
	for (int mod = 0; ok && mod < 2; mod++) {
		struct atf_module *md = atf_manifest__add_module(m, module_paths[mod]);

		ok = md != NULL;
		if (ok) {
			md->base_address = mod ? 0x7f0000000000ull : 0x400000;
			md->size = 0x20000;
			md->build_id = strdup(mod ? "0123456789abcdef0123456789abcdef01234567" : "feedc0de");
			ok = md->build_id != NULL;
		}
	}
	for (int f = 0; ok && f < F_COUNT; f++) {
		struct atf_symbol *s = atf_manifest__add_symbol(m, m->modules[functions[f].module].module_id,
								 functions[f].index, functions[f].name);

		ok = s != NULL;
		if (ok) {
			s->address = (functions[f].module ? 0x1000 : 0x401000) + functions[f].index * 0x40;
			s->size = 0x38;
			if (functions[f].demangled)
				ok = (s->demangled = strdup(functions[f].demangled)) != NULL;
		}
	}
	return ok ? 0 : -ENOMEM;
}

/* ---- corruption --------------------------------------------------------------------------- */

static int read_file(const char *path, uint8_t **buf, size_t *len)
{
	FILE *f = fopen(path, "rb");
	long n;

	if (!f)
		return -errno;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	*buf = malloc(n > 0 ? (size_t)n : 1);
	*len = n > 0 ? (size_t)n : 0;
	if (!*buf || fread(*buf, 1, *len, f) != *len) {
		fclose(f);
		free(*buf);
		return -EIO;
	}
	fclose(f);
	return 0;
}

static int write_file(const char *path, const uint8_t *buf, size_t len)
{
	FILE *f = fopen(path, "wb");
	int err = 0;

	if (!f)
		return -errno;
	if (fwrite(buf, 1, len, f) != len)
		err = -EIO;
	if (fclose(f) && !err)
		err = -errno;
	return err;
}

/* Recompute the index footer CRC after an event edit, so only the intended check fails. */
static void index_fix_crc(uint8_t *buf)
{
	struct atf_index_header h;

	atf_index_header_decode(&h, buf);
	put_le32(buf + h.footer_offset + 4,
		 atf_crc32(0, buf + h.events_offset, (uint64_t)h.event_count * ATF_INDEX_EVENT_SIZE));
}

/* First event of @kind (0: any) at or after the middle of the index, or -1. */
static int64_t find_event(const uint8_t *buf, uint32_t kind, struct atf_index_event *ev)
{
	struct atf_index_header h;

	atf_index_header_decode(&h, buf);
	for (uint64_t seq = h.event_count / 2; seq + 1 < h.event_count; seq++) {
		atf_index_event_decode(ev, buf + h.events_offset + seq * ATF_INDEX_EVENT_SIZE);
		if (seq && (!kind || ev->event_kind == kind))
			return (int64_t)seq;
	}
	return -1;
}

static int corrupt(const struct opts *o)
{
	char ipath[4096], dpath[4096], mpath[4096];
	uint8_t *buf = NULL, *dbuf = NULL;
	size_t len, dlen = 0, newlen;
	struct atf_index_header h;
	struct atf_index_event ev, prev;
	const char *mode = o->corrupt;
	int64_t seq;
	int err;

	snprintf(ipath, sizeof(ipath), "%s/thread_0/index.atf", o->out);
	snprintf(dpath, sizeof(dpath), "%s/thread_0/detail.atf", o->out);
	snprintf(mpath, sizeof(mpath), "%s/manifest.json", o->out);
	if (!strcmp(mode, "manifest")) {
		char *p;

		err = read_file(mpath, &buf, &len);
		if (err)
			return err;
		p = memmem(buf, len, "\"threads\"", 9);
		if (p)
			memcpy(p, "\"threadz\"", 9);
		err = p ? write_file(mpath, buf, len) : -EINVAL;
		free(buf);
		return err;
	}
	err = read_file(ipath, &buf, &len);
	if (err)
		return err;
	atf_index_header_decode(&h, buf);
	newlen = len;
	seq = find_event(buf, 0, &ev);
	if (seq < 0 && strcmp(mode, "bad-magic") && strcmp(mode, "count") && strcmp(mode, "no-footer")) {
		fprintf(stderr, "gen_session: --corrupt %s: thread_0 has too few events\n", mode);
		free(buf);
		return -EINVAL;
	}
	uint8_t *evp = buf + h.events_offset + (uint64_t)(seq < 0 ? 0 : seq) * ATF_INDEX_EVENT_SIZE;

	if (!strcmp(mode, "crc")) {
		evp[0] ^= 1;
	} else if (!strcmp(mode, "truncate") || !strcmp(mode, "no-footer")) {
		newlen = h.footer_offset - (strcmp(mode, "truncate") ? 0 : 13);
		atf_index_event_decode(&ev, buf + h.footer_offset - ATF_INDEX_EVENT_SIZE);
		if (!strcmp(mode, "truncate") && ev.detail_seq != ATF_NO_DETAIL) {
			struct atf_detail_header dh;

			err = read_file(dpath, &dbuf, &dlen);
			if (err)
				goto cleanup;
			atf_detail_header_decode(&dh, dbuf);   /* the writer's records are all one length */
			dlen = dh.events_offset + dh.bytes_length - dh.bytes_length / dh.event_count + 10;
			err = write_file(dpath, dbuf, dlen);
			if (err)
				goto cleanup;
		}
	} else if (!strcmp(mode, "time-order")) {
		atf_index_event_decode(&prev, evp - ATF_INDEX_EVENT_SIZE);
		ev.timestamp_ns = prev.timestamp_ns - 1;
		atf_index_event_encode(evp, &ev);
		index_fix_crc(buf);
	} else if (!strcmp(mode, "bad-magic")) {
		memcpy(buf, "XXXX", 4);
	} else if (!strcmp(mode, "nesting")) {
		seq = find_event(buf, ATF_KIND_RETURN, &ev);
		if (seq < 0) {
			err = -EINVAL;
			goto cleanup;
		}
		ev.call_depth++;
		atf_index_event_encode(buf + h.events_offset + (uint64_t)seq * ATF_INDEX_EVENT_SIZE, &ev);
		index_fix_crc(buf);
	} else if (!strcmp(mode, "dangling-link")) {
		ev.detail_seq = 0x7fffffff;
		atf_index_event_encode(evp, &ev);
		index_fix_crc(buf);
	} else if (!strcmp(mode, "unknown-function")) {
		ev.function_id = 0xdeadbeef00000001ull;
		atf_index_event_encode(evp, &ev);
		index_fix_crc(buf);
	} else if (!strcmp(mode, "count")) {
		put_le32(buf + 28, h.event_count + 1);
	} else {
		fprintf(stderr, "gen_session: --corrupt: unknown mode '%s'\n", mode);
		err = -EINVAL;
		goto cleanup;
	}
	err = write_file(ipath, buf, newlen);
cleanup:
	free(buf);
	free(dbuf);
	return err;
}

/* ---- main --------------------------------------------------------------------------------- */

static int parse_uint(const char *opt, const char *s, uint64_t max, uint64_t *out)
{
	char *end;

	errno = 0;
	*out = strtoull(s, &end, 0);
	if (!*s || *s == '-' || errno || *end || *out > max) {
		fprintf(stderr, "gen_session: %s: '%s': expected a number up to %llu\n", opt, s, (ull)max);
		return -EINVAL;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "out", required_argument, NULL, 'o' },       { "threads", required_argument, NULL, 't' },
		{ "calls", required_argument, NULL, 'c' },     { "depth", required_argument, NULL, 'd' },
		{ "recursion", required_argument, NULL, 'r' }, { "detail", no_argument, NULL, 'D' },
		{ "detail-every", required_argument, NULL, 'k' }, { "stack-bytes", required_argument, NULL, 'b' },
		{ "seed", required_argument, NULL, 's' },      { "events", required_argument, NULL, 'e' },
		{ "corrupt", required_argument, NULL, 'x' },   { 0 }
	};
	struct opts o = { .threads = 3, .calls = 4, .depth = 3, .recursion = 3, .detail_every = 3, .stack_bytes = 32,
			  .seed = 1 };
	struct atf_manifest *m = NULL;
	uint64_t v, tmin = UINT64_MAX, tmax = 0, events = 0, details = 0;
	char mpath[4096];
	int c, err = 0;

	while ((c = getopt_long(argc, argv, "o:", longopts, NULL)) != -1) {
		const char *name = c == 'o' ? "-o" : NULL;

		for (const struct option *lo = longopts; !name && lo->name; lo++)
			if (lo->val == c)
				name = lo->name;
		switch (c) {
		case 'o': o.out = optarg; break;
		case 'D': o.detail = true; break;
		case 'x': o.corrupt = optarg; break;
		case 't': err = parse_uint(name, optarg, 1024, &v); o.threads = (unsigned)v; break;
		case 'c': err = parse_uint(name, optarg, 1u << 30, &v); o.calls = (unsigned)v; break;
		case 'd': err = parse_uint(name, optarg, 64, &v); o.depth = (unsigned)v; break;
		case 'r': err = parse_uint(name, optarg, 10000, &v); o.recursion = (unsigned)v; break;
		case 'k': err = parse_uint(name, optarg, 1u << 30, &v); o.detail_every = (unsigned)v; break;
		case 'b': err = parse_uint(name, optarg, ATF_DETAIL_MAX_STACK, &v); o.stack_bytes = (unsigned)v; break;
		case 's': err = parse_uint(name, optarg, UINT64_MAX, &o.seed); break;
		case 'e': err = parse_uint(name, optarg, UINT32_MAX * 64ull, &o.events); break;
		default: err = -EINVAL;
		}
		if (err)
			return 2;
	}
	if (!o.out || optind != argc || !o.threads || !o.depth || !o.detail_every) {
		fprintf(stderr, "usage: gen_session -o DIR [--threads N>0] [--calls N] [--depth D>0] [--recursion R] "
				"[--detail] [--detail-every K>0] [--stack-bytes B] [--seed S] [--events TOTAL] "
				"[--corrupt MODE]\n");
		return 2;
	}
	if (mkdir(o.out, 0755) && errno != EEXIST) {
		fprintf(stderr, "gen_session: %s: %s\n", o.out, strerror(errno));
		return 1;
	}
	m = atf_manifest__new();
	err = m ? build_manifest(m) : -ENOMEM;
	for (unsigned i = 0; !err && i < o.threads; i++)
		err = gen_thread(&o, m, i, &tmin, &tmax, &events, &details);
	if (!err) {
		m->time_start_ns = tmin - 500;
		m->time_end_ns = tmax + 500;
		snprintf(mpath, sizeof(mpath), "%s/manifest.json", o.out);
		err = atf_manifest__save(m, mpath);
	}
	if (!err && o.corrupt)
		err = corrupt(&o);
	atf_manifest__free(m);
	if (err) {
		fprintf(stderr, "gen_session: %s: %s\n", o.out, atf_strerror(err));
		return 1;
	}
	printf("gen_session: %s: %u threads, %llu events, %llu detail events\n", o.out, o.threads, (ull)events,
	       (ull)details);
	return 0;
}
