#ifndef CJPEGSUPPORT_H
#define CJPEGSUPPORT_H
/* Placeholder header; the setjmp-guarded libjpeg wrapper lands with the JPEG decoder. */
int cjpeg_support_version(void);
#endif
