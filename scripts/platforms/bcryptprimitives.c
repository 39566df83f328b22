/*
 * bcryptprimitives.dll for wine 8, which has none: Rust's std (1.78 and later) imports ProcessPrng
 * from it for its random seeds, so without it no Rust-built .node loads under wine. Built with mingw
 * and installed into the test WINEPREFIX by wine-setup.sh; never shipped (docs/DEVELOPMENT.md,
 * "Windows under wine").
 */
#include <windows.h>
#include <bcrypt.h>

/* Windows' ProcessPrng always returns TRUE; this one says when wine's system RNG refused. */
__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    while (length > 0) {
        ULONG chunk = length > 0x40000000 ? 0x40000000 : (ULONG)length;
        if (!BCRYPT_SUCCESS(BCryptGenRandom(NULL, data, chunk, BCRYPT_USE_SYSTEM_PREFERRED_RNG))) {
            return FALSE;
        }
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}
