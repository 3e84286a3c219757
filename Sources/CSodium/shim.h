#ifndef PARLEY_CSODIUM_SHIM_H
#define PARLEY_CSODIUM_SHIM_H
#include <sodium.h>

/* Macros Swift cannot import, exposed as functions. */
static inline size_t parley_crypto_box_sealbytes(void) { return crypto_box_SEALBYTES; }
static inline size_t parley_secretstream_abytes(void) { return crypto_secretstream_xchacha20poly1305_ABYTES; }
static inline size_t parley_secretstream_headerbytes(void) { return crypto_secretstream_xchacha20poly1305_HEADERBYTES; }
static inline size_t parley_secretstream_keybytes(void) { return crypto_secretstream_xchacha20poly1305_KEYBYTES; }
static inline unsigned char parley_secretstream_tag_message(void) { return crypto_secretstream_xchacha20poly1305_TAG_MESSAGE; }
static inline unsigned char parley_secretstream_tag_final(void) { return crypto_secretstream_xchacha20poly1305_TAG_FINAL; }
static inline unsigned char parley_secretstream_tag_rekey(void) { return crypto_secretstream_xchacha20poly1305_TAG_REKEY; }
#endif
