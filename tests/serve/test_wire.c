// SPDX-License-Identifier: GPL-2.0-only
/* serve/wire: what the collector writes, the server reads back; broken streams are refused. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "serve/wire.h"

static void fill(struct hc_wire_buf *b)
{
	struct hc_path_elem proc = {
		.kind = HC_NODE_PROCESS, .name = "postgres", .id = 42, .offset = -1};
	struct hc_path_elem fn = {.kind = HC_NODE_USER,
				  .name = "ExecScan",
				  .module = "postgres",
				  .offset = -1,
				  .inlined = true};
	struct hc_weights w = {
		.on_cpu_ns = 1010101, .off_cpu_ns = 7, .runqueue_ns = 9, .samples = 1};
	struct hc_path_elem lock = {
		.kind = HC_NODE_LOCK, .name = "rwsem:W mmap_lock", .offset = -1};
	struct hc_weights lw = {.on_cpu_ns = 300, .off_cpu_ns = 7000000, .samples = 4};
	uint32_t path[3] = {1, 2, 2}, rows[HC_WIRE_HEAT_ROWS] = {0};

	rows[0] = 3;
	rows[49] = 5;
	hc_wire__frame(b, 1, &proc);
	hc_wire__frame(b, 2, &fn);
	hc_wire__add(b, 1795341600, &w, path, 3);
	hc_wire__heat(b, 1795341600, rows);
	hc_wire__hist(b, 1795341600, 3, 42, 16384, 12, "postgres");
	hc_wire__seal(b, 1795341598);
	hc_wire__status(b, &(struct hc_wire_status){.frequency_hz = 99,
						    .cpus = 2,
						    .flags = HC_WIRE_ST_LOCKS,
						    .n_counters = HC_C_MAX,
						    .c.v[HC_C_SAMPLES] = 5,
						    .c.v[HC_C_COLL_FRAMES] = 9});
	hc_wire__reset(b);
	/* --locks: the lock store's own frames and paths, ending in a lock node */
	hc_wire__lock_frame(b, 1, &lock);
	hc_wire__lock_add(b, 1795341601, &lw, path, 2);
	hc_wire__lock_reset(b);
	hc_wire__counter(b, 1795341601, 2, "rwsem:W block", 14900000);
}

static void check_all(struct hc_wire_reader *r)
{
	struct hc_wire_rec rec;

	assert_int_equal(hc_wire_reader__next(r, &rec), 1);
	assert_int_equal(rec.type, HC_WIRE_FRAME);
	assert_int_equal(rec.fid, 1);
	assert_int_equal(rec.elem.kind, HC_NODE_PROCESS);
	assert_string_equal(rec.elem.name, "postgres");
	assert_null(rec.elem.module);
	assert_int_equal(rec.elem.id, 42);
	assert_int_equal(rec.elem.offset, -1);
	assert_false(rec.elem.inlined);
	assert_int_equal(hc_wire_reader__next(r, &rec), 1);
	assert_int_equal(rec.fid, 2);
	assert_string_equal(rec.elem.module, "postgres");
	assert_int_equal(rec.elem.kind, HC_NODE_USER);
	assert_true(rec.elem.inlined);
	assert_int_equal(hc_wire_reader__next(r, &rec), 1);
	assert_int_equal(rec.type, HC_WIRE_ADD);
	assert_int_equal(rec.sec, 1795341600);
	assert_int_equal(rec.w.on_cpu_ns, 1010101);
	assert_int_equal(rec.w.off_cpu_ns, 7);
	assert_int_equal(rec.w.runqueue_ns, 9);
	assert_int_equal(rec.w.samples, 1);
	assert_int_equal(rec.n, 3);
	assert_int_equal(rec.fids[2], 2);
	assert_int_equal(hc_wire_reader__next(r, &rec), 1);
	assert_int_equal(rec.type, HC_WIRE_HEAT);
	assert_int_equal(rec.rows[0], 3);
	assert_int_equal(rec.rows[49], 5);
	assert_int_equal(hc_wire_reader__next(r, &rec), 1);
	assert_int_equal(rec.type, HC_WIRE_HIST);
	assert_int_equal(rec.hist, 3);
	assert_int_equal(rec.pid, 42);
	assert_int_equal(rec.value, 16384);
	assert_int_equal(rec.count, 12);
	assert_string_equal(rec.key, "postgres");
	assert_int_equal(hc_wire_reader__next(r, &rec), 1);
	assert_int_equal(rec.type, HC_WIRE_SEAL);
	assert_int_equal(rec.sec, 1795341598);
	assert_int_equal(hc_wire_reader__next(r, &rec), 1);
	assert_int_equal(rec.type, HC_WIRE_STATUS);
	assert_true(rec.status.frequency_hz == 99);
	assert_int_equal(rec.status.cpus, 2);
	assert_int_equal(rec.status.flags, HC_WIRE_ST_LOCKS);
	assert_int_equal(rec.status.c.v[HC_C_SAMPLES], 5);
	assert_int_equal(rec.status.c.v[HC_C_COLL_FRAMES], 9);
	assert_int_equal(hc_wire_reader__next(r, &rec), 1);
	assert_int_equal(rec.type, HC_WIRE_RESET);
	assert_int_equal(hc_wire_reader__next(r, &rec), 1);
	assert_int_equal(rec.type, HC_WIRE_LOCK_FRAME);
	assert_int_equal(rec.fid, 1);
	assert_int_equal(rec.elem.kind, HC_NODE_LOCK);
	assert_string_equal(rec.elem.name, "rwsem:W mmap_lock");
	assert_null(rec.elem.module);
	assert_int_equal(rec.elem.offset, -1);
	assert_int_equal(hc_wire_reader__next(r, &rec), 1);
	assert_int_equal(rec.type, HC_WIRE_LOCK_ADD);
	assert_int_equal(rec.sec, 1795341601);
	assert_int_equal(rec.w.on_cpu_ns, 300);
	assert_int_equal(rec.w.off_cpu_ns, 7000000);
	assert_int_equal(rec.w.runqueue_ns, 0);
	assert_int_equal(rec.w.samples, 4);
	assert_int_equal(rec.n, 2);
	assert_int_equal(rec.fids[1], 2);
	assert_int_equal(hc_wire_reader__next(r, &rec), 1);
	assert_int_equal(rec.type, HC_WIRE_LOCK_RESET);
	assert_int_equal(hc_wire_reader__next(r, &rec), 1);
	assert_int_equal(rec.type, HC_WIRE_COUNTER);
	assert_int_equal(rec.sec, 1795341601);
	assert_int_equal(rec.counter, 2);
	assert_int_equal(rec.count, 14900000);
	assert_string_equal(rec.key, "rwsem:W block");
	assert_int_equal(hc_wire_reader__next(r, &rec), 0);
}

static void test_round_trip(void **state)
{
	struct hc_wire_buf b = {0};
	struct hc_wire_reader r = {0};

	(void)state;
	fill(&b);
	assert_int_equal(b.err, 0);
	assert_int_equal(hc_wire_reader__feed(&r, b.data, b.len), 0);
	check_all(&r);
	hc_wire_reader__release(&r);
	hc_wire_buf__release(&b);
}

/* A stream cut anywhere yields nothing until the rest arrives. */
static void test_byte_by_byte(void **state)
{
	struct hc_wire_buf b = {0};
	struct hc_wire_reader r = {0}, whole = {0};
	struct hc_wire_rec rec;
	size_t got = 0;

	(void)state;
	fill(&b);
	for (size_t i = 0; i < b.len; i++) {
		int rc;

		assert_int_equal(hc_wire_reader__feed(&r, b.data + i, 1), 0);
		while ((rc = hc_wire_reader__next(&r, &rec)) == 1)
			got++;
		assert_int_equal(rc, 0);
	}
	assert_int_equal(got, 12);
	assert_int_equal(hc_wire_reader__feed(&whole, b.data, b.len), 0);
	check_all(&whole);
	hc_wire_reader__release(&r);
	hc_wire_reader__release(&whole);
	hc_wire_buf__release(&b);
}

static int read_one(const void *bytes, size_t len)
{
	struct hc_wire_reader r = {0};
	struct hc_wire_rec rec;
	int rc;

	assert_int_equal(hc_wire_reader__feed(&r, bytes, len), 0);
	rc = hc_wire_reader__next(&r, &rec);
	hc_wire_reader__release(&r);
	return rc;
}

static void test_malformed(void **state)
{
	struct hc_wire_buf b = {0};
	uint32_t hdr[2];
	unsigned char *p;
	uint32_t path[1] = {1};
	struct hc_weights w = {0};
	struct hc_path_elem e = {.kind = HC_NODE_USER, .name = "f", .offset = -1};

	(void)state;
	/* unknown type */
	hdr[0] = 99;
	hdr[1] = 0;
	assert_int_equal(read_one(hdr, sizeof(hdr)), -EBADMSG);
	/* a length beyond the limit is refused at once, not waited for */
	hdr[0] = HC_WIRE_SEAL;
	hdr[1] = HC_WIRE_MAX_RECORD + 1;
	assert_int_equal(read_one(hdr, sizeof(hdr)), -EBADMSG);
	/* SEAL with a short payload */
	{
		unsigned char rec[12] = {0};

		hdr[0] = HC_WIRE_SEAL;
		hdr[1] = 4;
		memcpy(rec, hdr, 8);
		assert_int_equal(read_one(rec, sizeof(rec)), -EBADMSG);
	}
	/* FRAME whose name is not NUL-terminated */
	hc_wire__frame(&b, 1, &e);
	p = b.data + b.len - 3; /* "f", NUL, module NUL */
	p[1] = 'x';
	assert_int_equal(read_one(b.data, b.len), -EBADMSG);
	hc_wire_buf__reset(&b);
	/* FRAME with kind bits other than the inlined flag */
	hc_wire__frame(&b, 1, &e);
	memcpy(b.data + 8 + 4, &(uint32_t){HC_NODE_USER | 1u << 9}, 4);
	assert_int_equal(read_one(b.data, b.len), -EBADMSG);
	hc_wire_buf__reset(&b);
	/* ADD claiming more frames than it carries */
	hc_wire__add(&b, 1, &w, path, 1);
	memcpy(b.data + 8 + 40, &(uint32_t){2}, 4);
	assert_int_equal(read_one(b.data, b.len), -EBADMSG);
	hc_wire_buf__reset(&b);
	/* ADD with a path over the limit */
	hc_wire__add(&b, 1, &w, path, 1);
	memcpy(b.data + 8 + 40, &(uint32_t){HC_WIRE_MAX_PATH + 1}, 4);
	assert_int_equal(read_one(b.data, b.len), -EBADMSG);
	hc_wire_buf__reset(&b);
	/* COUNTER whose key runs past the record */
	hc_wire__counter(&b, 1, 0, "mutex spin", 3);
	memcpy(b.data + 8 + 20, &(uint32_t){11}, 4);
	assert_int_equal(read_one(b.data, b.len), -EBADMSG);
	hc_wire_buf__reset(&b);
	/* COUNTER with a byte too many */
	hc_wire__counter(&b, 1, 0, "mutex spin", 3);
	memcpy(b.data + 4, &(uint32_t){8 + 4 + 8 + 4 + 11 + 1}, 4);
	b.data[b.len++] = 0; /* the buffer has room: it grows by 64 KiB */
	assert_int_equal(read_one(b.data, b.len), -EBADMSG);
	hc_wire_buf__reset(&b);
	/* STATUS of another build (counters not HC_C_MAX), a byte short, or not a rate */
	hc_wire__status(&b, &(struct hc_wire_status){.n_counters = HC_C_MAX - 1});
	assert_int_equal(read_one(b.data, b.len), -EBADMSG);
	hc_wire_buf__reset(&b);
	hc_wire__status(&b, &(struct hc_wire_status){.n_counters = HC_C_MAX});
	memcpy(b.data + 4, &(uint32_t){sizeof(struct hc_wire_status) - 1}, 4);
	assert_int_equal(read_one(b.data, b.len - 1), -EBADMSG);
	hc_wire_buf__reset(&b);
	hc_wire__status(&b, &(struct hc_wire_status){.n_counters = HC_C_MAX, .frequency_hz = NAN});
	assert_int_equal(read_one(b.data, b.len), -EBADMSG);
	hc_wire_buf__reset(&b);
	hc_wire__status(&b, &(struct hc_wire_status){.n_counters = HC_C_MAX});
	assert_int_equal(read_one(b.data, b.len), 1);
	hc_wire_buf__release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_byte_by_byte),
		cmocka_unit_test(test_malformed),
	};

	return cmocka_run_group_tests_name("wire", tests, NULL, NULL);
}
