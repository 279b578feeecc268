/* A small expression evaluator: tokenizer, recursive-descent parser building
 * an AST, constant folding, evaluation with variables. mlbridge demo input. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum tok_kind { T_NUM, T_IDENT, T_OP, T_LPAREN, T_RPAREN, T_END, T_ERR };

struct token {
    enum tok_kind kind;
    long value;
    char text[16];
};

struct lexer {
    const char *src;
    size_t pos;
    struct token cur;
};

enum node_kind { N_NUM, N_VAR, N_NEG, N_ADD, N_SUB, N_MUL, N_DIV, N_MOD, N_POW };

struct node {
    enum node_kind kind;
    long value;
    int var;
    struct node *lhs, *rhs;
};

struct env {
    long vars[26];
    int errors;
};

static int is_op_char(int c) { return c == '+' || c == '-' || c == '*' || c == '/' || c == '%' || c == '^'; }

static void skip_space(struct lexer *lx) {
    while (lx->src[lx->pos] && isspace((unsigned char)lx->src[lx->pos]))
        lx->pos++;
}

static long read_number(struct lexer *lx) {
    long v = 0;
    while (isdigit((unsigned char)lx->src[lx->pos]))
        v = v * 10 + (lx->src[lx->pos++] - '0');
    return v;
}

static void read_ident(struct lexer *lx, char *out, size_t cap) {
    size_t n = 0;
    while (isalpha((unsigned char)lx->src[lx->pos])) {
        if (n + 1 < cap)
            out[n++] = lx->src[lx->pos];
        lx->pos++;
    }
    out[n] = '\0';
}

static void next_token(struct lexer *lx) {
    skip_space(lx);
    char c = lx->src[lx->pos];
    struct token *t = &lx->cur;
    t->text[0] = '\0';
    if (!c) {
        t->kind = T_END;
    } else if (isdigit((unsigned char)c)) {
        t->kind = T_NUM;
        t->value = read_number(lx);
    } else if (isalpha((unsigned char)c)) {
        t->kind = T_IDENT;
        read_ident(lx, t->text, sizeof t->text);
    } else if (is_op_char(c)) {
        t->kind = T_OP;
        t->text[0] = c;
        t->text[1] = '\0';
        lx->pos++;
    } else if (c == '(' || c == ')') {
        t->kind = c == '(' ? T_LPAREN : T_RPAREN;
        lx->pos++;
    } else {
        t->kind = T_ERR;
        lx->pos++;
    }
}

static struct node *new_node(enum node_kind kind, struct node *lhs, struct node *rhs) {
    struct node *n = calloc(1, sizeof *n);
    if (!n)
        exit(1);
    n->kind = kind;
    n->lhs = lhs;
    n->rhs = rhs;
    return n;
}

static struct node *num_node(long v) {
    struct node *n = new_node(N_NUM, NULL, NULL);
    n->value = v;
    return n;
}

static void free_node(struct node *n) {
    if (!n)
        return;
    free_node(n->lhs);
    free_node(n->rhs);
    free(n);
}

static int accept_op(struct lexer *lx, char op) {
    if (lx->cur.kind == T_OP && lx->cur.text[0] == op) {
        next_token(lx);
        return 1;
    }
    return 0;
}

static struct node *parse_expr(struct lexer *lx);

static struct node *parse_primary(struct lexer *lx) {
    struct node *n;
    switch (lx->cur.kind) {
    case T_NUM:
        n = num_node(lx->cur.value);
        next_token(lx);
        return n;
    case T_IDENT:
        n = new_node(N_VAR, NULL, NULL);
        n->var = (lx->cur.text[0] | 32) - 'a';
        next_token(lx);
        return n;
    case T_LPAREN:
        next_token(lx);
        n = parse_expr(lx);
        if (lx->cur.kind == T_RPAREN)
            next_token(lx);
        return n;
    default:
        next_token(lx);
        return num_node(0);
    }
}

static struct node *parse_unary(struct lexer *lx) {
    if (accept_op(lx, '-'))
        return new_node(N_NEG, parse_unary(lx), NULL);
    return parse_primary(lx);
}

static struct node *parse_power(struct lexer *lx) {
    struct node *base = parse_unary(lx);
    if (accept_op(lx, '^'))
        return new_node(N_POW, base, parse_power(lx));
    return base;
}

static struct node *parse_term(struct lexer *lx) {
    struct node *n = parse_power(lx);
    for (;;) {
        if (accept_op(lx, '*'))
            n = new_node(N_MUL, n, parse_power(lx));
        else if (accept_op(lx, '/'))
            n = new_node(N_DIV, n, parse_power(lx));
        else if (accept_op(lx, '%'))
            n = new_node(N_MOD, n, parse_power(lx));
        else
            return n;
    }
}

static struct node *parse_expr(struct lexer *lx) {
    struct node *n = parse_term(lx);
    for (;;) {
        if (accept_op(lx, '+'))
            n = new_node(N_ADD, n, parse_term(lx));
        else if (accept_op(lx, '-'))
            n = new_node(N_SUB, n, parse_term(lx));
        else
            return n;
    }
}

static long ipow(long b, long e) {
    long r = 1;
    while (e > 0) {
        if (e & 1)
            r *= b;
        b *= b;
        e >>= 1;
    }
    return r;
}

static long apply(enum node_kind k, long a, long b, int *err) {
    switch (k) {
    case N_ADD: return a + b;
    case N_SUB: return a - b;
    case N_MUL: return a * b;
    case N_DIV: if (b == 0) { (*err)++; return 0; } return a / b;
    case N_MOD: if (b == 0) { (*err)++; return 0; } return a % b;
    case N_POW: return ipow(a, b);
    default: return 0;
    }
}

static int is_const(const struct node *n) { return n && n->kind == N_NUM; }

static struct node *fold(struct node *n, int *err) {
    if (!n || n->kind == N_NUM || n->kind == N_VAR)
        return n;
    n->lhs = fold(n->lhs, err);
    n->rhs = fold(n->rhs, err);
    if (n->kind == N_NEG && is_const(n->lhs)) {
        long v = -n->lhs->value;
        free_node(n);
        return num_node(v);
    }
    if (is_const(n->lhs) && is_const(n->rhs)) {
        long v = apply(n->kind, n->lhs->value, n->rhs->value, err);
        free_node(n);
        return num_node(v);
    }
    return n;
}

static long eval(const struct node *n, struct env *env) {
    switch (n->kind) {
    case N_NUM: return n->value;
    case N_VAR: return env->vars[n->var % 26];
    case N_NEG: return -eval(n->lhs, env);
    default: return apply(n->kind, eval(n->lhs, env), eval(n->rhs, env), &env->errors);
    }
}

static int count_nodes(const struct node *n) {
    return n ? 1 + count_nodes(n->lhs) + count_nodes(n->rhs) : 0;
}

static struct node *parse(const char *src) {
    struct lexer lx = {src, 0, {T_END, 0, ""}};
    next_token(&lx);
    return parse_expr(&lx);
}

int main(int argc, char **argv) {
    static const char *samples[] = {
        "1 + 2 * 3", "(x + 1) * (x - 1)", "2 ^ 10 - y % 7", "-(a + b) * c / 2",
        "((1+2)*(3+4)) ^ 2 + x*y*z", "100 / (x - x)",
    };
    struct env env;
    memset(&env, 0, sizeof env);
    for (int i = 0; i < 26; i++)
        env.vars[i] = i + argc;
    long total = 0;
    int n = argc > 1 ? argc - 1 : (int)(sizeof samples / sizeof *samples);
    for (int i = 0; i < n; i++) {
        struct node *ast = fold(parse(argc > 1 ? argv[i + 1] : samples[i]), &env.errors);
        long v = eval(ast, &env);
        printf("%d nodes -> %ld\n", count_nodes(ast), v);
        total += v;
        free_node(ast);
    }
    printf("total %ld, errors %d\n", total, env.errors);
    return env.errors > 1; /* the sample divides by zero once on purpose */
}
