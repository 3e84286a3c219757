#ifndef PARLEY_CQRENCODE_SHIM_H
#define PARLEY_CQRENCODE_SHIM_H
/* libqrencode (Debian libqrencode-dev 4.x): QR code symbols. Everything Parley calls
 * (QRcode_encodeData, QRcode_free, the QRcode struct, QRecLevel) imports into Swift as it is;
 * errno.h for the error the encoder reports through errno when it returns NULL. */
#include <errno.h>
#include <qrencode.h>

#endif
