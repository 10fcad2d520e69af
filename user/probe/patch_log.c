// SPDX-License-Identifier: MIT
/*
 * The patch log at the start of a trampoline area: encode and decode (include/patch_log.h has
 * the layout). Pure: no system calls, every read bounds-checked, so that a header read out of
 * another process (perhaps damaged, perhaps not ours) can only be refused, never trusted.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "byteorder.h"
#include "patch_log.h"

#define OFF_MAGIC 0
#define OFF_VERSION 8
#define OFF_SIZE 12
#define OFF_RECSIZE 16
#define OFF_NRECORDS 20
#define OFF_CRC 24
#define OFF_STATE 28
#define OFF_OWNER_PID 32
#define OFF_RESERVED1 36
#define OFF_OWNER_START 40
#define OFF_AREA 48
#define OFF_DEV 56
#define OFF_INO 64
#define OFF_MAP_ADDR 72
#define OFF_MAP_OFFSET 80
#define OFF_MAP_SIZE 88
#define OFF_BUILD_ID_LEN 96
#define OFF_PATH_LEN 100
#define OFF_BUILD_ID 104
#define OFF_PATH 136
#define OFF_RESERVED2 (OFF_PATH + PATCH_LOG_MAX_PATH + 1)

#define REC_ADDR 0
#define REC_FILE_OFF 8
#define REC_LEN 16
#define REC_KIND 20
#define REC_ORIG 24
#define REC_WRITTEN 40

static const char *const messages[] = {
	[PATCH_LOG_OK] = "no error",
	[PATCH_LOG_ERR_TRUNCATED] = "truncated header",
	[PATCH_LOG_ERR_MAGIC] = "not an atftrace patch log (bad magic)",
	[PATCH_LOG_ERR_VERSION] = "unknown patch log version",
	[PATCH_LOG_ERR_SIZE] = "header size out of range",
	[PATCH_LOG_ERR_RECORD_SIZE] = "unknown record size",
	[PATCH_LOG_ERR_COUNT] = "more records than the header holds",
	[PATCH_LOG_ERR_CHECKSUM] = "checksum mismatch (damaged header)",
	[PATCH_LOG_ERR_FIELD] = "a header field out of range",
	[PATCH_LOG_ERR_RECORD] = "a patch record out of range",
	[PATCH_LOG_ERR_NO_ROOM] = "the records do not fit in the header",
	[PATCH_LOG_ERR_ARG] = "a field to write is out of range",
	[PATCH_LOG_ERR_NOMEM] = "out of memory",
};

const char *patch_log_strerror(int err)
{
	if (err < 0 || err >= PATCH_LOG_ERR_LAST || (size_t)err >= sizeof(messages) / sizeof(*messages) ||
	    !messages[err])
		return "unknown patch log error";
	return messages[err];
}

int patch_record_init(struct patch_record *r, uint32_t kind, uint64_t addr, uint64_t file_off,
		      const uint8_t *orig, const uint8_t *written, uint32_t len)
{
	if (!kind || kind > PATCH_KIND_MAX || !len || len > PATCH_LOG_MAX_BYTES ||
	    addr + len < addr || !memcmp(orig, written, len))
		return PATCH_LOG_ERR_ARG;
	*r = (struct patch_record){ .addr = addr, .file_off = file_off, .len = len, .kind = kind };
	memcpy(r->orig, orig, len);
	memcpy(r->written, written, len);
	return PATCH_LOG_OK;
}

static uint32_t capacity(uint32_t size)
{
	return size < PATCH_LOG_FIXED ? 0 : (size - PATCH_LOG_FIXED) / PATCH_LOG_RECORD;
}

uint32_t patch_log_size(uint32_t nrecords)
{
	uint64_t bytes = PATCH_LOG_FIXED + (uint64_t)nrecords * PATCH_LOG_RECORD;

	bytes = (bytes + PATCH_LOG_PAGE - 1) / PATCH_LOG_PAGE * PATCH_LOG_PAGE;
	return bytes > PATCH_LOG_MAX_SIZE ? 0 : (uint32_t)bytes;
}

static bool size_ok(uint64_t size)
{
	return size >= PATCH_LOG_PAGE && size <= PATCH_LOG_MAX_SIZE && size % PATCH_LOG_PAGE == 0;
}

/* The CRC of @size bytes with the CRC field taken as 0. */
static uint32_t header_crc(const uint8_t *buf, uint32_t size)
{
	static const uint8_t zero[4];
	uLong crc = crc32(0L, Z_NULL, 0);

	crc = crc32(crc, buf, OFF_CRC);
	crc = crc32(crc, zero, sizeof(zero));
	crc = crc32(crc, buf + OFF_CRC + 4, size - OFF_CRC - 4);
	return (uint32_t)crc;
}

int patch_log_encode(const struct patch_log *log, uint8_t *buf, size_t size)
{
	size_t path_len = strnlen(log->path, sizeof(log->path));

	if (!size_ok(size))
		return PATCH_LOG_ERR_SIZE;
	if (log->nrecords > capacity((uint32_t)size))
		return PATCH_LOG_ERR_NO_ROOM;
	if (log->build_id_len > PATCH_LOG_MAX_BUILD_ID || path_len > PATCH_LOG_MAX_PATH ||
	    (log->state != PATCH_LOG_PATCHED && log->state != PATCH_LOG_RESTORED))
		return PATCH_LOG_ERR_ARG;
	for (uint32_t i = 0; i < log->nrecords; i++) {
		const struct patch_record *r = &log->records[i];

		if (!r->len || r->len > PATCH_LOG_MAX_BYTES || !r->kind || r->kind > PATCH_KIND_MAX)
			return PATCH_LOG_ERR_ARG;
	}
	memset(buf, 0, size);
	memcpy(buf + OFF_MAGIC, PATCH_LOG_MAGIC, 8);
	put_le32(buf + OFF_VERSION, PATCH_LOG_VERSION);
	put_le32(buf + OFF_SIZE, (uint32_t)size);
	put_le32(buf + OFF_RECSIZE, PATCH_LOG_RECORD);
	put_le32(buf + OFF_NRECORDS, log->nrecords);
	put_le32(buf + OFF_STATE, log->state);
	put_le32(buf + OFF_OWNER_PID, log->owner_pid);
	put_le64(buf + OFF_OWNER_START, log->owner_start);
	put_le64(buf + OFF_AREA, log->area_addr);
	put_le64(buf + OFF_DEV, log->dev);
	put_le64(buf + OFF_INO, log->ino);
	put_le64(buf + OFF_MAP_ADDR, log->map_addr);
	put_le64(buf + OFF_MAP_OFFSET, log->map_offset);
	put_le64(buf + OFF_MAP_SIZE, log->map_size);
	put_le32(buf + OFF_BUILD_ID_LEN, log->build_id_len);
	put_le32(buf + OFF_PATH_LEN, (uint32_t)path_len);
	memcpy(buf + OFF_BUILD_ID, log->build_id, log->build_id_len);
	memcpy(buf + OFF_PATH, log->path, path_len);
	for (uint32_t i = 0; i < log->nrecords; i++) {
		const struct patch_record *r = &log->records[i];
		uint8_t *p = buf + PATCH_LOG_FIXED + (size_t)i * PATCH_LOG_RECORD;

		put_le64(p + REC_ADDR, r->addr);
		put_le64(p + REC_FILE_OFF, r->file_off);
		put_le32(p + REC_LEN, r->len);
		put_le32(p + REC_KIND, r->kind);
		memcpy(p + REC_ORIG, r->orig, r->len);
		memcpy(p + REC_WRITTEN, r->written, r->len);
	}
	put_le32(buf + OFF_CRC, header_crc(buf, (uint32_t)size));
	return PATCH_LOG_OK;
}

int patch_log_set_state(uint8_t *buf, size_t size, uint32_t state)
{
	uint32_t hsize;
	int err = patch_log_header_size(buf, size, &hsize);

	if (err)
		return err;
	if (hsize != size)
		return PATCH_LOG_ERR_SIZE;
	if (state != PATCH_LOG_PATCHED && state != PATCH_LOG_RESTORED)
		return PATCH_LOG_ERR_ARG;
	put_le32(buf + OFF_STATE, state);
	put_le32(buf + OFF_CRC, header_crc(buf, hsize));
	return PATCH_LOG_OK;
}

/* A bounds-checked view of the bytes read: every get is within @len or fails. */
struct reader {
	const uint8_t *p;
	size_t len;
	bool bad;
};

static uint32_t rd32(struct reader *r, size_t off)
{
	if (off > r->len || r->len - off < 4) {
		r->bad = true;
		return 0;
	}
	return get_le32(r->p + off);
}

static uint64_t rd64(struct reader *r, size_t off)
{
	if (off > r->len || r->len - off < 8) {
		r->bad = true;
		return 0;
	}
	return get_le64(r->p + off);
}

static const uint8_t *rdbytes(struct reader *r, size_t off, size_t n)
{
	if (off > r->len || r->len - off < n) {
		r->bad = true;
		return NULL;
	}
	return r->p + off;
}

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

int patch_log_header_size(const uint8_t *buf, size_t len, uint32_t *size)
{
	struct reader r = { buf, len, false };
	const uint8_t *magic = rdbytes(&r, OFF_MAGIC, 8);
	uint32_t version = rd32(&r, OFF_VERSION), hsize = rd32(&r, OFF_SIZE);

	if (r.bad)
		return PATCH_LOG_ERR_TRUNCATED;
	if (memcmp(magic, PATCH_LOG_MAGIC, 8))
		return PATCH_LOG_ERR_MAGIC;
	if (version != PATCH_LOG_VERSION)
		return PATCH_LOG_ERR_VERSION;
	if (!size_ok(hsize))
		return PATCH_LOG_ERR_SIZE;
	*size = hsize;
	return PATCH_LOG_OK;
}

/* One record at @off of @r into @out; false when out of range. */
static bool read_record(struct reader *r, size_t off, struct patch_record *out)
{
	const uint8_t *orig, *written;

	out->addr = rd64(r, off + REC_ADDR);
	out->file_off = rd64(r, off + REC_FILE_OFF);
	out->len = rd32(r, off + REC_LEN);
	out->kind = rd32(r, off + REC_KIND);
	orig = rdbytes(r, off + REC_ORIG, PATCH_LOG_MAX_BYTES);
	written = rdbytes(r, off + REC_WRITTEN, PATCH_LOG_MAX_BYTES);
	if (r->bad || !out->len || out->len > PATCH_LOG_MAX_BYTES || !out->kind ||
	    out->kind > PATCH_KIND_MAX || out->addr + out->len < out->addr ||
	    !all_zero(orig + out->len, PATCH_LOG_MAX_BYTES - out->len) ||
	    !all_zero(written + out->len, PATCH_LOG_MAX_BYTES - out->len) ||
	    !memcmp(orig, written, out->len))
		return false;
	memcpy(out->orig, orig, PATCH_LOG_MAX_BYTES);
	memcpy(out->written, written, PATCH_LOG_MAX_BYTES);
	return true;
}

int patch_log_decode(const uint8_t *buf, size_t len, struct patch_log *out)
{
	struct reader r = { buf, len, false };
	const uint8_t *build_id, *path, *rsv2;
	uint32_t size, recsize, n, crc, path_len;
	size_t tail;
	int err;

	memset(out, 0, sizeof(*out));
	err = patch_log_header_size(buf, len, &size);
	if (err)
		return err;
	if (size > len)
		return PATCH_LOG_ERR_TRUNCATED;
	r.len = size;                   /* nothing past the header is read */
	recsize = rd32(&r, OFF_RECSIZE);
	n = rd32(&r, OFF_NRECORDS);
	crc = rd32(&r, OFF_CRC);
	if (r.bad)
		return PATCH_LOG_ERR_TRUNCATED;
	if (recsize != PATCH_LOG_RECORD)
		return PATCH_LOG_ERR_RECORD_SIZE;
	if (n > capacity(size))
		return PATCH_LOG_ERR_COUNT;
	if (crc != header_crc(buf, size))
		return PATCH_LOG_ERR_CHECKSUM;
	out->header_size = size;
	out->state = rd32(&r, OFF_STATE);
	out->owner_pid = rd32(&r, OFF_OWNER_PID);
	out->owner_start = rd64(&r, OFF_OWNER_START);
	out->area_addr = rd64(&r, OFF_AREA);
	out->dev = rd64(&r, OFF_DEV);
	out->ino = rd64(&r, OFF_INO);
	out->map_addr = rd64(&r, OFF_MAP_ADDR);
	out->map_offset = rd64(&r, OFF_MAP_OFFSET);
	out->map_size = rd64(&r, OFF_MAP_SIZE);
	out->build_id_len = rd32(&r, OFF_BUILD_ID_LEN);
	path_len = rd32(&r, OFF_PATH_LEN);
	build_id = rdbytes(&r, OFF_BUILD_ID, PATCH_LOG_MAX_BUILD_ID);
	path = rdbytes(&r, OFF_PATH, PATCH_LOG_MAX_PATH + 1);
	rsv2 = rdbytes(&r, OFF_RESERVED2, PATCH_LOG_FIXED - OFF_RESERVED2);
	if (r.bad)
		return PATCH_LOG_ERR_TRUNCATED;
	if ((out->state != PATCH_LOG_PATCHED && out->state != PATCH_LOG_RESTORED) ||
	    rd32(&r, OFF_RESERVED1) || out->build_id_len > PATCH_LOG_MAX_BUILD_ID ||
	    path_len > PATCH_LOG_MAX_PATH || memchr(path, 0, path_len) ||
	    !all_zero(path + path_len, PATCH_LOG_MAX_PATH + 1 - path_len) ||
	    !all_zero(build_id + out->build_id_len, PATCH_LOG_MAX_BUILD_ID - out->build_id_len) ||
	    !all_zero(rsv2, PATCH_LOG_FIXED - OFF_RESERVED2) ||
	    out->map_addr + out->map_size < out->map_addr) {
		memset(out, 0, sizeof(*out));
		return PATCH_LOG_ERR_FIELD;
	}
	memcpy(out->build_id, build_id, out->build_id_len);
	memcpy(out->path, path, path_len);
	out->path[path_len] = '\0';
	out->records = calloc(n ? n : 1, sizeof(*out->records));
	if (!out->records) {
		memset(out, 0, sizeof(*out));
		return PATCH_LOG_ERR_NOMEM;
	}
	for (uint32_t i = 0; i < n; i++)
		if (!read_record(&r, PATCH_LOG_FIXED + (size_t)i * PATCH_LOG_RECORD, &out->records[i])) {
			patch_log_free(out);
			memset(out, 0, sizeof(*out));
			return PATCH_LOG_ERR_RECORD;
		}
	/* the room for more records is written as zeros */
	tail = PATCH_LOG_FIXED + (size_t)n * PATCH_LOG_RECORD;
	if (!all_zero(buf + tail, size - tail)) {
		patch_log_free(out);
		memset(out, 0, sizeof(*out));
		return PATCH_LOG_ERR_RECORD;
	}
	out->nrecords = n;
	return PATCH_LOG_OK;
}

void patch_log_free(struct patch_log *log)
{
	free(log->records);
	log->records = NULL;
	log->nrecords = 0;
}

/* @now equals @want, or does with an int3 (another tool's breakpoint) on its first byte. */
static bool same_but_int3(const uint8_t *now, const uint8_t *want, uint32_t len)
{
	if (!memcmp(now, want, len))
		return true;
	return now[0] == 0xcc && !memcmp(now + 1, want + 1, len - 1);
}

enum patch_now patch_log_unpatch(const struct patch_record *r, const uint8_t *now, uint8_t *out)
{
	if (!r->len || r->len > PATCH_LOG_MAX_BYTES)
		return PATCH_NOW_FOREIGN;
	if (same_but_int3(now, r->written, r->len)) {
		memcpy(out, r->orig, r->len);
		if (now[0] == 0xcc && r->written[0] != 0xcc)
			out[0] = 0xcc;          /* the other tool's breakpoint stays */
		return PATCH_NOW_OURS;
	}
	if (same_but_int3(now, r->orig, r->len))
		return PATCH_NOW_ORIGINAL;
	return PATCH_NOW_FOREIGN;
}
