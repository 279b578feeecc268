/* An open-addressing string hash table with resizing, used to count words.
 * mlbridge demo input. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct entry {
    char *key;
    long count;
    uint32_t hash;
    int used;
};

struct table {
    struct entry *slots;
    size_t cap;
    size_t len;
    size_t probes;
};

static uint32_t fnv1a(const char *s, size_t n) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 16777619u;
    }
    return h;
}

static uint32_t mix(uint32_t h) {
    h ^= h >> 16;
    h *= 0x7feb352dU;
    h ^= h >> 15;
    h *= 0x846ca68bU;
    h ^= h >> 16;
    return h;
}

static uint32_t hash_key(const char *s, size_t n) { return mix(fnv1a(s, n)); }

static void *xcalloc(size_t n, size_t size) {
    void *p = calloc(n, size);
    if (!p) {
        fputs("out of memory\n", stderr);
        exit(1);
    }
    return p;
}

static char *dup_key(const char *s, size_t n) {
    char *k = xcalloc(n + 1, 1);
    memcpy(k, s, n);
    return k;
}

static void table_init(struct table *t, size_t cap) {
    t->cap = cap;
    t->len = 0;
    t->probes = 0;
    t->slots = xcalloc(cap, sizeof *t->slots);
}

static size_t slot_index(const struct table *t, uint32_t h) { return h & (t->cap - 1); }

static int key_equals(const struct entry *e, const char *s, size_t n, uint32_t h) {
    return e->hash == h && strlen(e->key) == n && memcmp(e->key, s, n) == 0;
}

static struct entry *find_slot(struct table *t, const char *s, size_t n, uint32_t h) {
    size_t i = slot_index(t, h);
    for (;;) {
        struct entry *e = &t->slots[i];
        t->probes++;
        if (!e->used || key_equals(e, s, n, h))
            return e;
        i = (i + 1) & (t->cap - 1);
    }
}

static void table_grow(struct table *t);

static int needs_growth(const struct table *t) { return (t->len + 1) * 4 > t->cap * 3; }

static struct entry *table_upsert(struct table *t, const char *s, size_t n) {
    if (needs_growth(t))
        table_grow(t);
    uint32_t h = hash_key(s, n);
    struct entry *e = find_slot(t, s, n, h);
    if (!e->used) {
        e->used = 1;
        e->key = dup_key(s, n);
        e->hash = h;
        e->count = 0;
        t->len++;
    }
    return e;
}

static void reinsert(struct table *t, struct entry *old) {
    size_t i = slot_index(t, old->hash);
    while (t->slots[i].used)
        i = (i + 1) & (t->cap - 1);
    t->slots[i] = *old;
}

static void table_grow(struct table *t) {
    struct entry *old = t->slots;
    size_t old_cap = t->cap;
    table_init(t, old_cap * 2);
    for (size_t i = 0; i < old_cap; i++) {
        if (old[i].used) {
            reinsert(t, &old[i]);
            t->len++;
        }
    }
    free(old);
}

static long table_get(struct table *t, const char *s) {
    size_t n = strlen(s);
    struct entry *e = find_slot(t, s, n, hash_key(s, n));
    return e->used ? e->count : 0;
}

static void table_free(struct table *t) {
    for (size_t i = 0; i < t->cap; i++)
        if (t->slots[i].used)
            free(t->slots[i].key);
    free(t->slots);
}

static int is_word_char(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '\''; }

static size_t count_words(struct table *t, const char *text) {
    size_t words = 0;
    const char *p = text;
    while (*p) {
        while (*p && !is_word_char(*p))
            p++;
        const char *start = p;
        while (*p && is_word_char(*p))
            p++;
        if (p > start) {
            table_upsert(t, start, (size_t)(p - start))->count++;
            words++;
        }
    }
    return words;
}

static int cmp_entries(const void *a, const void *b) {
    const struct entry *x = *(const struct entry *const *)a, *y = *(const struct entry *const *)b;
    if (x->count != y->count)
        return x->count < y->count ? 1 : -1;
    return strcmp(x->key, y->key);
}

static void print_top(struct table *t, size_t k) {
    struct entry **order = xcalloc(t->len ? t->len : 1, sizeof *order);
    size_t n = 0;
    for (size_t i = 0; i < t->cap; i++)
        if (t->slots[i].used)
            order[n++] = &t->slots[i];
    qsort(order, n, sizeof *order, cmp_entries);
    for (size_t i = 0; i < n && i < k; i++)
        printf("%-12s %ld\n", order[i]->key, order[i]->count);
    free(order);
}

int main(int argc, char **argv) {
    static const char text[] =
        "the quick brown fox jumps over the lazy dog and the dog sleeps while the fox "
        "runs around the farm where the farmer keeps his chickens and his dog's bowl";
    struct table t;
    table_init(&t, 8);
    size_t words = count_words(&t, text);
    for (int i = 1; i < argc; i++)
        words += count_words(&t, argv[i]);
    printf("%zu words, %zu distinct, %zu probes\n", words, t.len, t.probes);
    print_top(&t, 5);
    long the = table_get(&t, "the");
    table_free(&t);
    return the > 0 ? 0 : 1;
}
