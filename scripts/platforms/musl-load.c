/* Loads an addon as Node would on a musl system, with nothing of Node: musl's dynamic loader binds
 * every symbol at load time, so a symbol that only glibc has fails here (build-targets.mjs runs it
 * on the x64 musl addon; no musl Node exists on npm). Prints the entry point napi looks up. */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: musl-load <addon.node>\n");
        return 2;
    }
    void *addon = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (addon == NULL) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 1;
    }
    if (dlsym(addon, "napi_register_module_v1") == NULL) {
        fprintf(stderr, "dlsym: %s\n", dlerror());
        return 1;
    }
    printf("loaded by musl's loader, napi_register_module_v1 found\n");
    return 0;
}
