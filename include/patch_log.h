/* SPDX-License-Identifier: MIT */
/*
 * The patch log: the header pages at the start of a trampoline area (user/probe/patch_log.c).
 *
 * A session that writes a process's text (the `jmp trampoline` over a function's entry, and any
 * other patch of a few bytes, such as a call site's rel32) logs each patch in the file that the
 * process maps for it, before the patch is written: the module it is in (device, inode, the
 * mapping it assumes, build-id, path), and per patch its address, file offset, length, the
 * original bytes and the bytes written. So the area describes itself: when the session dies
 * without its restore (kill -9), `atftrace restore -p PID` finds the area in /proc/PID/maps and
 * writes the original bytes back.
 *
 * Layout, every field little-endian at a fixed offset (PATCH_LOG_FIXED bytes, then the records;
 * the whole header is a whole number of pages, and the area's code follows it):
 *   0 magic "ATFAREA1"        8 u32 version             12 u32 header size (bytes)
 *  16 u32 record size        20 u32 records            24 u32 CRC-32 (zlib) of the header with
 *  28 u32 state (1 patched, 2 restored by its session)     this field taken as 0
 *  32 u32 owner pid (the recorder)                     36 u32 reserved (0)
 *  40 u64 owner start time (clock ticks after boot, /proc/PID/stat field 22)
 *  48 u64 area address       56 u64 module device       64 u64 module inode
 *  72 u64 map address        80 u64 map file offset     88 u64 map size  (the module's
 *     executable mapping the patches assume)
 *  96 u32 build-id length   100 u32 path length (without NUL)
 * 104 u8 build-id[32]       136 char path[256] (NUL-padded)           392..511 reserved (0)
 * 512 records of PATCH_LOG_RECORD bytes:
 *   0 u64 address   8 u64 file offset   16 u32 length (1..16)   20 u32 kind
 *  24 u8 original[16]   40 u8 written[16]   (bytes past the length are 0)
 */
#ifndef ATFTRACE_PATCH_LOG_H
#define ATFTRACE_PATCH_LOG_H

#include <stddef.h>
#include <stdint.h>

#define PATCH_LOG_MAGIC "ATFAREA1"
#define PATCH_LOG_VERSION 1u
#define PATCH_LOG_PAGE 4096u
#define PATCH_LOG_FIXED 512u
#define PATCH_LOG_RECORD 56u
#define PATCH_LOG_MAX_BYTES 16u
#define PATCH_LOG_MAX_BUILD_ID 32u
#define PATCH_LOG_MAX_PATH 255u
#define PATCH_LOG_MAX_SIZE (64u << 20)      /* more than a million records: anything past is damage */

/* State of the patches (u32 on disk). */
#define PATCH_LOG_PATCHED 1u
#define PATCH_LOG_RESTORED 2u               /* its session wrote the original bytes back */

/* Kind of a patch (u32 on disk). */
#define PATCH_KIND_ENTRY_JMP 1u             /* `jmp trampoline` over a function's first bytes */
#define PATCH_KIND_CALL_REL32 2u            /* a call site's rel32: logged as the whole 5-byte call */
#define PATCH_KIND_CALL_IND 3u              /* an indirect call site (call *mem): the whole call,
					     * written as `jmp stub` and int3 */
#define PATCH_KIND_JMP_REL32 4u             /* a tail call's rel32: the whole e9 or 0f 8x jump */
#define PATCH_KIND_MAX 4u

/* Errors: 0 is none; reading 1..63; writing 64... */
enum patch_log_err {
	PATCH_LOG_OK = 0,
	PATCH_LOG_ERR_TRUNCATED = 1,        /* fewer bytes than the header needs */
	PATCH_LOG_ERR_MAGIC,                /* not a patch log */
	PATCH_LOG_ERR_VERSION,              /* a version this build does not read */
	PATCH_LOG_ERR_SIZE,                 /* header size not whole pages, or too large */
	PATCH_LOG_ERR_RECORD_SIZE,          /* a record size this version does not use */
	PATCH_LOG_ERR_COUNT,                /* more records than the header holds */
	PATCH_LOG_ERR_CHECKSUM,             /* the CRC does not match: damaged */
	PATCH_LOG_ERR_FIELD,                /* state, a length or a reserved field out of range */
	PATCH_LOG_ERR_RECORD,               /* a record's kind, length or bytes out of range */
	PATCH_LOG_ERR_READ_LAST,
	PATCH_LOG_ERR_NO_ROOM = 64,         /* the records do not fit in the buffer */
	PATCH_LOG_ERR_ARG,                  /* a field to write is out of range */
	PATCH_LOG_ERR_NOMEM,
	PATCH_LOG_ERR_LAST
};

struct patch_record {
	uint64_t addr;                      /* in the process */
	uint64_t file_off;                  /* in the module's file */
	uint32_t len;                       /* 1..PATCH_LOG_MAX_BYTES */
	uint32_t kind;                      /* PATCH_KIND_* */
	uint8_t orig[PATCH_LOG_MAX_BYTES];
	uint8_t written[PATCH_LOG_MAX_BYTES];
};

struct patch_log {
	uint32_t header_size;               /* decode: as read; encode: from the buffer's size */
	uint32_t state;
	uint32_t owner_pid;
	uint64_t owner_start;
	uint64_t area_addr;
	uint64_t dev, ino;
	uint64_t map_addr, map_offset, map_size;
	uint32_t build_id_len;
	uint8_t build_id[PATCH_LOG_MAX_BUILD_ID];
	char path[PATCH_LOG_MAX_PATH + 1];
	struct patch_record *records;       /* decode: allocated (patch_log_free) */
	uint32_t nrecords;
};

/**
 * patch_record_init - the record of one patch of @kind (PATCH_KIND_*): @len bytes at @addr in the
 * process (@file_off in the module's file), @orig the bytes there before, @written ours. The
 * same for every kind: an entry jmp, a whole `call stub` at a call site. PATCH_LOG_OK, or
 * PATCH_LOG_ERR_ARG (nothing set) when the kind or length is out of range or @orig equals
 * @written (such a record would not decode).
 */
int patch_record_init(struct patch_record *r, uint32_t kind, uint64_t addr, uint64_t file_off,
		      const uint8_t *orig, const uint8_t *written, uint32_t len);

/** patch_log_strerror - a short English message for @err ("bad magic", ...). */
const char *patch_log_strerror(int err);

/** patch_log_size - the header size (whole pages) that holds @nrecords records. */
uint32_t patch_log_size(uint32_t nrecords);

/**
 * patch_log_encode - write @log (its records and the CRC) into @buf, @size bytes (a whole number
 * of pages, at most PATCH_LOG_MAX_SIZE); header_size is taken as @size. PATCH_LOG_OK or an error.
 */
int patch_log_encode(const struct patch_log *log, uint8_t *buf, size_t size);

/**
 * patch_log_header_size - from the first @len bytes of a header (PATCH_LOG_FIXED are enough),
 * how many bytes the whole header has, into @size: checks magic, version and size only.
 */
int patch_log_header_size(const uint8_t *buf, size_t len, uint32_t *size);

/**
 * patch_log_decode - read and check a whole header from @buf (@len bytes, at least its header
 * size): every field in range, the CRC right. Fills @out (records allocated: patch_log_free()).
 * PATCH_LOG_OK or an error; @out holds nothing to free then.
 */
int patch_log_decode(const uint8_t *buf, size_t len, struct patch_log *out);

/**
 * patch_log_set_state - set the state of the encoded header @buf (@size bytes, as written by
 * patch_log_encode()) to @state, with its CRC. PATCH_LOG_OK or an error.
 */
int patch_log_set_state(uint8_t *buf, size_t size, uint32_t state);

/** patch_log_free - the records of a decoded log. */
void patch_log_free(struct patch_log *log);

/* What is at a patch's address now (patch_log_unpatch). */
enum patch_now {
	PATCH_NOW_OURS,                     /* the written bytes (perhaps under another tool's int3) */
	PATCH_NOW_ORIGINAL,                 /* the original bytes (perhaps under an int3): nothing to do */
	PATCH_NOW_FOREIGN,                  /* anything else: not ours to write */
};

/**
 * patch_log_unpatch - given @now, the @r->len bytes at @r's address today, what to write back
 * into @out: @r's original bytes when @now is what we wrote, or that with another tool's int3
 * on its first byte kept (its breakpoint goes on working). @out is filled for PATCH_NOW_OURS only.
 */
enum patch_now patch_log_unpatch(const struct patch_record *r, const uint8_t *now, uint8_t *out);

#endif
