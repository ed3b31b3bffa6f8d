/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The tree's hash functions, for its open-addressing tables (which index by the low bits,
 * so every hash here is fully mixed unless said otherwise). Not for anything an attacker
 * must not collide: the tables probe linearly and are bounded by their callers.
 * Inline: they sit on the per-sample paths (the stack table, the tree's child lookup).
 */
#ifndef HOTCOLD_BASE_HASH_H
#define HOTCOLD_BASE_HASH_H

#include <stddef.h>
#include <stdint.h>

/* 2^64 / golden ratio: a multiplier that spreads sequential keys (Fibonacci hashing). */
#define HC_HASH_GOLDEN 0x9E3779B97F4A7C15ULL

/* xxh64's primes. */
#define HC_XXH_P1 0x9E3779B185EBCA87ULL
#define HC_XXH_P2 0xC2B2AE3D27D4EB4FULL
#define HC_XXH_P3 0x165667B19E3779F9ULL
#define HC_XXH_P4 0x85EBCA77C2B2AE63ULL
#define HC_XXH_P5 0x27D4EB2F165667C5ULL

static inline uint64_t hc_hash_rotl(uint64_t x, int r)
{
	return (x << r) | (x >> (64 - r));
}

/* xxh64's final avalanche: a bijective 64-bit mix. */
static inline uint64_t hc_hash_mix(uint64_t h)
{
	h ^= h >> 33;
	h *= HC_XXH_P2;
	h ^= h >> 29;
	h *= HC_XXH_P3;
	h ^= h >> 32;
	return h;
}

/* splitmix64's finalizer: another bijective mix, for keys that are sequential (tgids,
 * inodes). */
static inline uint64_t hc_hash_splitmix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

/* xxh64-style hash of n words: each step is a bijection of the state for a fixed input word,
 * so distinct keys only collide by genuine 64-bit collisions. */
static inline uint64_t hc_hash_words(const uint64_t *key, size_t n, uint64_t seed)
{
	uint64_t h = seed + HC_XXH_P5 + (uint64_t)n * 8;

	for (size_t i = 0; i < n; i++) {
		uint64_t k = key[i] * HC_XXH_P2;

		k = hc_hash_rotl(k, 31) * HC_XXH_P1;
		h ^= k;
		h = hc_hash_rotl(h, 27) * HC_XXH_P1 + HC_XXH_P4;
	}
	return hc_hash_mix(h);
}

#define HC_FNV1A_OFFSET 0xcbf29ce484222325ULL
#define HC_FNV1A_PRIME 0x100000001b3ULL

/* FNV-1a over n bytes, continuing from h (HC_FNV1A_OFFSET to start a hash): for hashes of
 * several strings. Not mixed: finish with hc_hash_mix() before masking low bits. */
static inline uint64_t hc_hash_fnv1a(uint64_t h, const void *s, size_t n)
{
	const unsigned char *b = s;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= HC_FNV1A_PRIME;
	}
	return h;
}

/* The string tables' hash of n bytes: FNV-1a (cheap on short names: symbols, comms), with
 * the length folded in, then a full avalanche. */
static inline uint64_t hc_hash_bytes(const void *s, size_t n)
{
	return hc_hash_mix(hc_hash_fnv1a(HC_FNV1A_OFFSET, s, n) ^ n);
}

#endif
