/* dso_handle: what crtbeginS.o defines for a shared library. aarch64_test.sh links a library
 * without the C start files (Debian's cross toolchain ships them without BTI landing pads, and
 * a library marked for BTI that calls into them would fault in the loader), and libc's
 * pthread_atfork still needs this symbol. */
void *__dso_handle __attribute__((visibility("hidden"))) = &__dso_handle;
