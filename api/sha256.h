/* api/sha256.h -- SHA-256 (FIPS 180-4). */
#ifndef MFU_SHA256_H
#define MFU_SHA256_H
#include <stddef.h>
#include <stdint.h>
void mfu_sha256(const void *data, size_t len, uint8_t out[32]);
void mfu_sha256_hex(const void *data, size_t len, char out[65]);
#endif
