/* SHA-256 (FIPS 180-4), for the audit log's fingerprints of the config and profile files.
 * Small and local: this kernel family may lack AF_ALG hashing (CONFIG_CRYPTO_USER_API_HASH),
 * and one hash does not justify a crypto library dependency. */
#ifndef RD_SHA256_H
#define RD_SHA256_H

#include <stddef.h>
#include <stdint.h>

void rd_sha256(const void *data, size_t len, uint8_t out[32]);

/* The SHA-256 of data, in hex, into hex[65]. */
void rd_sha256_hex(const void *data, size_t len, char hex[65]);

#endif
