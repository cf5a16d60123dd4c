// Builds a zstd dictionary from given content and the entropy statistics of sample texts
// (ZDICT_finalizeDictionary): scripts/ledger-dictionary/make.sh.
//   finalize CONTENT OUT LEVEL SAMPLE...
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zdict.h>

static char *slurp(const char *path, size_t *size) {
    FILE *file = fopen(path, "rb");
    if (!file) { perror(path); exit(1); }
    fseek(file, 0, SEEK_END);
    *size = (size_t)ftell(file);
    rewind(file);
    char *bytes = malloc(*size + 1);
    if (fread(bytes, 1, *size, file) != *size) { perror(path); exit(1); }
    fclose(file);
    return bytes;
}

int main(int argc, char **argv) {
    if (argc < 5) { fprintf(stderr, "usage: finalize CONTENT OUT LEVEL SAMPLE...\n"); return 2; }
    size_t contentSize;
    char *content = slurp(argv[1], &contentSize);
    size_t count = (size_t)(argc - 4), total = 0;
    size_t *sizes = malloc(sizeof(size_t) * count);
    char **samples = malloc(sizeof(char *) * count);
    for (size_t i = 0; i < count; i++) { samples[i] = slurp(argv[4 + i], &sizes[i]); total += sizes[i]; }
    char *all = malloc(total), *at = all;
    for (size_t i = 0; i < count; i++) { memcpy(at, samples[i], sizes[i]); at += sizes[i]; }
    // dictID 2: the ledger's id for it (frames do not carry it; this only labels the file).
    ZDICT_params_t params = { .compressionLevel = atoi(argv[3]), .notificationLevel = 0, .dictID = 2 };
    size_t capacity = contentSize + 65536;
    char *dictionary = malloc(capacity);
    size_t size = ZDICT_finalizeDictionary(dictionary, capacity, content, contentSize, all, sizes, (unsigned)count, params);
    if (ZDICT_isError(size)) { fprintf(stderr, "finalize: %s\n", ZDICT_getErrorName(size)); return 1; }
    FILE *out = fopen(argv[2], "wb");
    fwrite(dictionary, 1, size, out);
    fclose(out);
    return 0;
}
