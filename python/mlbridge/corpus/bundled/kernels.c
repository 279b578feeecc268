/* Sorting and small matrix kernels with a checker. mlbridge demo input. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 24

typedef struct {
    double a[N][N];
} matrix;

static unsigned rng_state = 12345u;

static unsigned rng_next(void) {
    rng_state = rng_state * 1103515245u + 12345u;
    return (rng_state >> 16) & 0x7fff;
}

static void swap_int(int *a, int *b) {
    int t = *a;
    *a = *b;
    *b = t;
}

static int less(int a, int b) { return a < b; }

static void insertion_sort(int *v, int lo, int hi) {
    for (int i = lo + 1; i <= hi; i++)
        for (int j = i; j > lo && less(v[j], v[j - 1]); j--)
            swap_int(&v[j], &v[j - 1]);
}

static int median3(int *v, int lo, int hi) {
    int mid = lo + (hi - lo) / 2;
    if (less(v[mid], v[lo])) swap_int(&v[mid], &v[lo]);
    if (less(v[hi], v[lo])) swap_int(&v[hi], &v[lo]);
    if (less(v[hi], v[mid])) swap_int(&v[hi], &v[mid]);
    return v[mid];
}

static void quick_sort(int *v, int lo, int hi) {
    while (hi - lo > 12) {
        int pivot = median3(v, lo, hi), i = lo, j = hi;
        while (i <= j) {
            while (less(v[i], pivot)) i++;
            while (less(pivot, v[j])) j--;
            if (i <= j) swap_int(&v[i++], &v[j--]);
        }
        if (j - lo < hi - i) {
            quick_sort(v, lo, j);
            lo = i;
        } else {
            quick_sort(v, i, hi);
            hi = j;
        }
    }
    insertion_sort(v, lo, hi);
}

static void merge(int *v, int *tmp, int lo, int mid, int hi) {
    int i = lo, j = mid + 1, k = lo;
    while (i <= mid && j <= hi) tmp[k++] = less(v[j], v[i]) ? v[j++] : v[i++];
    while (i <= mid) tmp[k++] = v[i++];
    while (j <= hi) tmp[k++] = v[j++];
    memcpy(v + lo, tmp + lo, (size_t)(hi - lo + 1) * sizeof *v);
}

static void merge_sort_rec(int *v, int *tmp, int lo, int hi) {
    if (hi - lo < 8) {
        insertion_sort(v, lo, hi);
        return;
    }
    int mid = lo + (hi - lo) / 2;
    merge_sort_rec(v, tmp, lo, mid);
    merge_sort_rec(v, tmp, mid + 1, hi);
    merge(v, tmp, lo, mid, hi);
}

static void merge_sort(int *v, int n) {
    int *tmp = malloc((size_t)n * sizeof *tmp);
    if (!tmp) exit(1);
    merge_sort_rec(v, tmp, 0, n - 1);
    free(tmp);
}

static void sift_down(int *v, int root, int n) {
    for (;;) {
        int child = 2 * root + 1;
        if (child >= n) return;
        if (child + 1 < n && less(v[child], v[child + 1])) child++;
        if (!less(v[root], v[child])) return;
        swap_int(&v[root], &v[child]);
        root = child;
    }
}

static void heap_sort(int *v, int n) {
    for (int i = n / 2 - 1; i >= 0; i--) sift_down(v, i, n);
    for (int end = n - 1; end > 0; end--) {
        swap_int(&v[0], &v[end]);
        sift_down(v, 0, end);
    }
}

static int is_sorted(const int *v, int n) {
    for (int i = 1; i < n; i++)
        if (less(v[i], v[i - 1])) return 0;
    return 1;
}

static void fill_random(int *v, int n) {
    for (int i = 0; i < n; i++) v[i] = (int)rng_next() - 16384;
}

static void mat_random(matrix *m) {
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) m->a[i][j] = (double)(rng_next() % 100) / 10.0;
}

static void mat_identity(matrix *m) {
    memset(m, 0, sizeof *m);
    for (int i = 0; i < N; i++) m->a[i][i] = 1.0;
}

static void mat_mul(const matrix *x, const matrix *y, matrix *out) {
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            double s = 0;
            for (int k = 0; k < N; k++) s += x->a[i][k] * y->a[k][j];
            out->a[i][j] = s;
        }
}

static void mat_transpose(const matrix *x, matrix *out) {
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) out->a[j][i] = x->a[i][j];
}

static double mat_trace(const matrix *m) {
    double t = 0;
    for (int i = 0; i < N; i++) t += m->a[i][i];
    return t;
}

static double mat_max_diff(const matrix *x, const matrix *y) {
    double d = 0;
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            double e = x->a[i][j] - y->a[i][j];
            if (e < 0) e = -e;
            if (e > d) d = e;
        }
    return d;
}

static int check_sorts(int n) {
    int *a = malloc((size_t)n * sizeof *a), *b = malloc((size_t)n * sizeof *b),
        *c = malloc((size_t)n * sizeof *c);
    if (!a || !b || !c) exit(1);
    fill_random(a, n);
    memcpy(b, a, (size_t)n * sizeof *a);
    memcpy(c, a, (size_t)n * sizeof *a);
    quick_sort(a, 0, n - 1);
    merge_sort(b, n);
    heap_sort(c, n);
    int ok = is_sorted(a, n) && memcmp(a, b, (size_t)n * sizeof *a) == 0 &&
             memcmp(a, c, (size_t)n * sizeof *a) == 0;
    free(a);
    free(b);
    free(c);
    return ok;
}

static int check_matrices(void) {
    static matrix x, id, p, t, tt;
    mat_random(&x);
    mat_identity(&id);
    mat_mul(&x, &id, &p);
    mat_transpose(&x, &t);
    mat_transpose(&t, &tt);
    return mat_max_diff(&x, &p) < 1e-12 && mat_max_diff(&x, &tt) == 0.0 &&
           mat_trace(&id) == (double)N;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 5000;
    int sorts = check_sorts(n > 0 ? n : 1);
    int mats = check_matrices();
    printf("sorts %s, matrices %s\n", sorts ? "ok" : "BAD", mats ? "ok" : "BAD");
    return !(sorts && mats);
}
