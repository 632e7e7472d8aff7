/* credit._pyspans: credit.pyspans.python_spans in C, each row read left to right.

The numpy version (credit/pyspans.py, `python_spans_numpy`) answers in some forty vectorized
passes over the rows' bytes, many of them small array operations whose fixed cost dominates: about
17 ms of a 91 ms credit.didpo call on the shared harness's paper batch. This reads each row twice
(its string literals, then one pass over the rest) and each group's code rows once more for the
blocks: about 1.5 ms there. It gives exactly the same answers: the subset's rules and the node
rules of pyspans.py's module docstring, as the numpy passes compute them, including what they do
that is not obvious (tests/credit/test_credit_pyspans_native.py holds both versions equal on
windows of the standard library, the benchmark's hunk sides and fuzzed rows):

- every read next to a position is clamped to the buffer as the numpy code clamps it (`at`), and a
  string's prefix is read from the bytes before its row, whatever they are;
- the colon-in-parentheses rule finds a colon's bracket as the last one opened at the colon's
  depth counted over all rows, not per group, and marks rows through their logical line, so the
  blank rows that open a group take the verdict of the previous group's last line;
- a batch without any code row skips the structure rules (so a group of comments is answered);
- a keyword is what credit.pyspans passes (keyword.kwlist and softkwlist of the running Python),
  packed as little-endian integers as the numpy code packs them.

Input outside python_spans' contract (rows past the buffer, groups not numbered 0.. in order) is
not read: the function returns None and credit.pyspans runs numpy. Optional: credit.pyspans falls
back to numpy when this is not built.

Threads (credit/_threads.h): the time goes to reading the rows (scan_row, line_rules: a few ns a
byte) and the groups' blocks, in proportion to the rows' bytes; checking the contract and the
optional gathering of rows out of order take a few per cent. Groups are independent but for the
two rules above that read across them, so the groups, weighed by their rows' bytes plus ROW_WORK a
row, are cut into runs of about equal work (credit_part_start; MIN_PART_WORK or more each), one
run per part, with the GIL released as before. Each part reads its rows into the shared per-row
arrays (its own rows only) with its own scratch, allocated by the calling thread, and writes its
groups' answers and its nodes into `first` / `last` from its first row on (a group has no more
nodes than rows). Across parts: the depth counted over all rows starts at 0 in each part, which
shifts its level slots alike and reads no slot of an earlier part (see scan_part); whether the
batch has code is found before the parts (has_code); the blank rows a part starts with, whose
line lies in an earlier part, and their groups are finished by the calling thread after the join,
part by part in order, before it moves each part's nodes down after the nodes before them. So the
answer is the one thread's for any number of parts. The only error a part meets is running out of
memory (a flag; MemoryError after the join).
*/
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_threads.h"

/* The work of a row, to weigh the groups between parts: its bytes plus ROW_WORK; a part gets
   MIN_PART_WORK at least (about 0.15 ms of reading: a thread costs some 30-50 us to start). */
#define ROW_WORK 16
#define MIN_PART_WORK 32768

/* the keywords a row may start with: indices as credit.pyspans._WORDS */
enum { DEF, CLASS, IF, FOR, WHILE, TRY, WITH, ELIF, ELSE, EXCEPT, FINALLY, ASYNC, MATCH, CASE, DECORATOR };
#define NONE (-1)
#define N_WORDS 14
static const char *const WORDS[N_WORDS] = {"def",  "class", "if",     "for",     "while", "try",   "with",
                                           "elif", "else",  "except", "finally", "async", "match", "case"};
static const uint8_t WORD_SIZES[N_WORDS] = {3, 5, 2, 3, 5, 3, 4, 4, 4, 6, 7, 5, 5, 4};
static const char *const OPERATOR_WORDS[5] = {"and", "or", "in", "is", "as"}; /* no statement starts with one */
static const uint8_t OPERATOR_SIZES[5] = {3, 2, 2, 2, 2};
#define BIT(word) (1u << (word))
#define COMPOUND (BIT(DEF) | BIT(CLASS) | BIT(IF) | BIT(FOR) | BIT(WHILE) | BIT(TRY) | BIT(WITH))
#define CLAUSES (BIT(ELIF) | BIT(ELSE) | BIT(EXCEPT) | BIT(FINALLY))
/* headers that need text between keyword and colon (`elif:` is not Python) */
#define NEEDS_TEXT (BIT(DEF) | BIT(CLASS) | BIT(IF) | BIT(ELIF) | BIT(WHILE) | BIT(FOR) | BIT(WITH))
#define IN(word, set) ((word) >= 0 && ((set) >> (word)) & 1u)

/* per-row flags */
#define BLANK 1
#define COMMENT 2
#define CODE 4
#define CONTINUED 8
#define OPERATOR_WORD 16
#define FLAGGED 32 /* (at a logical line's first row) a colon directly inside parentheses */
#define LAMBDA 64  /* (at a logical line's first row) `lambda` in one of its rows */
#define HEADER 128

static uint8_t IDENT[256], SPACE[256], BLANK_ONLY[256], BACKSLASH[256], STARTS[256], PREFIX[256], BINARY[256],
    AFTER_OPEN[256], DANGLING[256], SPECIAL[256], OPEN[256], CLOSE[256], WORD_START[256], READ[256];

static void set_bytes(uint8_t *table, const char *bytes) {
    for (; *bytes; bytes++) table[(uint8_t)*bytes] = 1;
}

static void init_tables(void) {
    set_bytes(IDENT, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
    for (int b = 128; b < 256; b++) IDENT[b] = 1;
    set_bytes(SPACE, " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f"); /* credit.text.WHITESPACE */
    set_bytes(BLANK_ONLY, " ");
    set_bytes(BACKSLASH, "\\");
    memcpy(STARTS, IDENT, 256);
    set_bytes(STARTS, "\"'([{@*-+~");
    set_bytes(PREFIX, "rbfu");
    set_bytes(BINARY, "%/|&^<>@");
    set_bytes(AFTER_OPEN, "([{,");
    set_bytes(DANGLING, "+-*/%&|^<>=.@~");
    set_bytes(SPECIAL, "\"'\\#()[]{}:,$?`!%/|&^<>@");
    for (int k = 0; k < N_WORDS; k++) WORD_START[(uint8_t)WORDS[k][0]] = 1;
    for (int k = 0; k < 5; k++) WORD_START[(uint8_t)OPERATOR_WORDS[k][0]] = 1;
    memcpy(READ, SPECIAL, 256); /* the bytes the pass over a row stops at */
    set_bytes(READ, " .l");
    OPEN['('] = CLOSE[')'] = 1;
    OPEN['['] = CLOSE[']'] = 2;
    OPEN['{'] = CLOSE['}'] = 3;
}

/* A growable array of int64. */
typedef struct {
    int64_t *items;
    int64_t size, capacity;
} Vec;

static int vec_reserve(Vec *v, int64_t size) {
    if (size <= v->capacity) return 0;
    int64_t capacity = v->capacity ? 2 * v->capacity : 64;
    while (capacity < size) capacity *= 2;
    int64_t *items = realloc(v->items, (size_t)capacity * sizeof(int64_t));
    if (items == NULL) return -1;
    v->items = items;
    v->capacity = capacity;
    return 0;
}

typedef struct {
    const uint8_t *buf;
    int64_t L, n, n_groups;
    const int64_t *s, *e, *group;
    const uint64_t *keywords;
    int64_t n_keywords;
    /* per row */
    int64_t *first, *code_end, *last, *line, *line_end;
    int32_t *colon0, *comma0;
    int8_t *word;
    uint8_t *flags;
    /* per group */
    uint8_t *unsure;
    /* one row's string literals and their bytes */
    int64_t *lo, *hi;
    uint8_t *quoted;
    /* the bracket kinds open in the current group; the last bracket opened at each depth counted
       over all rows (row * 2 + 1 for '(', -1 for none), depths >= 0 and < 0 apart */
    Vec stack, level_up, level_down;
} Scan;

/* buf[p], clamped into the buffer as the numpy code clamps its reads */
static inline uint8_t at(const Scan *c, int64_t p) { return c->buf[p < 0 ? 0 : (p >= c->L ? c->L - 1 : p)]; }

/* credit.text.skip_while over a byte table: the first position from pos on (step -1: backwards)
   whose byte is not in the table, or limit; a start at or past its limit stays put. */
static int64_t skip(const Scan *c, const uint8_t *table, int64_t pos, int64_t limit, int step) {
    if ((limit - pos) * step <= 0) return pos;
    while (pos != limit && table[c->buf[pos]]) pos += step;
    return pos;
}

/* Whether a quote at p has an even run of backslashes before it, counted back to its row's start. */
static int unescaped(const Scan *c, int64_t p, int64_t s) {
    int64_t x = skip(c, BACKSLASH, p - 1, s - 1, -1);
    return (p - 1 - x) % 2 == 0;
}

/* The little-endian value of the `size` bytes from p (clamped reads): pyspans._eight_bytes, masked. */
static uint64_t packed(const Scan *c, int64_t p, int64_t size) {
    uint64_t value = 0;
    for (int64_t i = 0; i < size; i++) value |= (uint64_t)at(c, p + i) << (8 * i);
    return value;
}

/* pyspans._is_keyword: buf[a:b] is one of the keywords given (all fit in eight bytes). */
static int is_keyword(const Scan *c, int64_t a, int64_t b) {
    if (b - a > 8) return 0;
    uint64_t value = packed(c, a, b - a);
    int64_t low = 0, high = c->n_keywords;
    while (low < high) {
        int64_t mid = (low + high) / 2;
        if (c->keywords[mid] < value) low = mid + 1;
        else high = mid;
    }
    return low < c->n_keywords && c->keywords[low] == value;
}


/* pyspans._strings for row r: its string literals (c->lo, c->hi; their count through n_spans) and
   code_end (the comment's '#' or the row's end; the row's first '#' when the row is unsure).
   Returns 1 when a literal does not end on the row or an f-string has a replacement field. */
static int read_strings(Scan *c, int64_t r, int64_t *n_spans) {
    const uint8_t *buf = c->buf;
    int64_t s = c->s[r], e = c->e[r], p, k = 0;
    const uint8_t *hash = memchr(buf + s, '#', (size_t)(e - s));
    c->code_end[r] = hash ? hash - buf : e;
    int64_t cursor = s;
    int bad = 0;
    for (;;) {
        int64_t q = cursor;
        while (q < e && buf[q] != '"' && buf[q] != '\'' && buf[q] != '#') q++;
        if (q == e || buf[q] == '#') { /* no literal left, or a comment before the next one */
            c->code_end[r] = q;
            break;
        }
        uint8_t quote = buf[q];
        int triple = q + 2 < e && at(c, q + 1) == quote && at(c, q + 2) == quote;
        int64_t close = -1;
        if (!triple) {
            for (p = q + 1; p < e; p++)
                if (buf[p] == quote && unescaped(c, p, s)) {
                    close = p + 1;
                    break;
                }
        } else {
            for (p = q + 3; p < e; p++)
                if (buf[p] == quote && unescaped(c, p, s) && at(c, p + 1) == quote && at(c, p + 2) == quote) {
                    if (p + 3 <= e) close = p + 3;
                    break;
                }
        }
        uint8_t before = at(c, q - 1), before2 = at(c, q - 2);
        int fstring = (before | 32) == 'f' || ((before2 | 32) == 'f' && IDENT[before]);
        if (close < 0 || (fstring && memchr(buf + q, '{', (size_t)(close - q)) != NULL)) {
            bad = 1;
            break;
        }
        c->lo[k] = q;
        c->hi[k] = close;
        k++;
        cursor = close;
    }
    *n_spans = k;
    return bad;
}

/* The slot of the last bracket opened at a depth counted over all rows (NULL when out of memory). */
static int64_t *level_slot(Scan *c, int64_t level) {
    Vec *v = level >= 0 ? &c->level_up : &c->level_down;
    int64_t index = level >= 0 ? level : -level - 1;
    if (index >= v->size) {
        if (vec_reserve(v, index + 1) < 0) return NULL;
        for (int64_t i = v->size; i <= index; i++) v->items[i] = -1;
        v->size = index + 1;
    }
    return v->items + index;
}

/* pyspans._first_words for code row r. */
static void first_word(Scan *c, int64_t r) {
    int64_t first = c->first[r];
    uint8_t window[9];
    for (int i = 0; i < 9; i++) window[i] = at(c, first + i);
    c->word[r] = window[0] == '@' ? DECORATOR : NONE;
    if (!WORD_START[window[0]]) return;
    for (int k = 0; k < N_WORDS; k++) {
        int size = WORD_SIZES[k];
        if (WORDS[k][0] == window[0] && memcmp(window, WORDS[k], size) == 0 && !IDENT[window[size]])
            c->word[r] = (int8_t)k;
    }
    for (int k = 0; k < 5; k++) {
        int size = OPERATOR_SIZES[k];
        if (OPERATOR_WORDS[k][0] == window[0] && memcmp(window, OPERATOR_WORDS[k], size) == 0 && !IDENT[window[size]])
            c->flags[r] |= OPERATOR_WORD;
    }
}

static inline int quoted(const Scan *c, int64_t r, int64_t p) {
    return p >= c->s[r] && p < c->e[r] && c->quoted[p - c->s[r]];
}

static inline int name_byte(const Scan *c, int64_t r, int64_t p) { return IDENT[c->buf[p]] || quoted(c, r, p); }

/* pyspans._adjacent_names at one gap of row r (a space after a name, outside literals): the
   names (a literal counts as one) on both sides of the spaces from it, neither a keyword. */
static int adjacent_names(const Scan *c, int64_t r, int64_t gap) {
    int64_t s = c->s[r], code_end = c->code_end[r];
    int64_t next = skip(c, BLANK_ONLY, gap, c->L - 1, 1);
    if (next >= code_end || !name_byte(c, r, next)) return 0;
    int64_t start = gap - 1;
    if (start > s - 1)
        while (start != s - 1 && name_byte(c, r, start)) start--;
    int64_t end = next; /* next < code_end here */
    while (end != code_end && name_byte(c, r, end)) end++;
    return !is_keyword(c, start + 1, gap) && !is_keyword(c, next, end);
}

/* Row r's cheap rules (pyspans._lines up to the logical lines): indentation, literals, the bytes
   outside them, brackets, and its first word; its group is marked unsure where one fails.
   `current_line` is the last code or comment row so far (-1: none), over all groups. */
static int scan_row(Scan *c, int64_t r, int64_t *group_depth, int *group_bad, int64_t *depth, int64_t *current_line) {
    const uint8_t *buf = c->buf;
    int64_t s = c->s[r], e = c->e[r], g = c->group[r], p;
    uint8_t *unsure = c->unsure + g;
    int64_t first = skip(c, BLANK_ONLY, s, e, 1);
    int tab = first < e && SPACE[at(c, first)];
    if (tab) first = skip(c, SPACE, first, e, 1);
    int blank = first >= e;
    if (tab && !blank) *unsure = 1;
    c->first[r] = first;
    uint8_t head = at(c, first);
    int64_t n_spans;
    if (read_strings(c, r, &n_spans)) *unsure = 1;
    int64_t code_end = c->code_end[r];
    memset(c->quoted, 0, (size_t)(e - s));
    for (int64_t k = 0; k < n_spans; k++) memset(c->quoted + (c->lo[k] - s), 1, (size_t)(c->hi[k] - c->lo[k]));
    /* the logical line: a row that starts inside brackets continues the one above */
    uint8_t flags = blank ? BLANK : *group_depth > 0 ? CONTINUED : head == '#' ? COMMENT : CODE;
    c->flags[r] = flags;
    if (flags & (CODE | COMMENT)) *current_line = r;
    int64_t line = *current_line < 0 ? 0 : *current_line;
    c->line[r] = line;
    c->line_end[r] = r;
    if (flags & CONTINUED) c->line_end[line] = r;
    /* one pass from the first non-blank byte: the special bytes outside literals and comments in
       order, '..' elisions, names side by side, and `lambda` anywhere (the bytes before are blank:
       only a gap at the row's start can matter there) */
    if (s < first && !blank && buf[s] == ' ' && s >= 1 && s < code_end && IDENT[buf[s - 1]]
        && adjacent_names(c, r, s))
        *unsure = 1;
    int64_t span = 0;
    for (p = first; p < e; p++) {
        uint8_t b = buf[p];
        if (!READ[b]) continue;
        if (b == 'l') {
            if (p + 6 <= c->L && buf[p + 1] == 'a' && memcmp(buf + p, "lambda", 6) == 0) c->flags[line] |= LAMBDA;
            continue;
        }
        if (p >= code_end) continue;
        while (span < n_spans && c->hi[span] <= p) span++;
        if (span < n_spans && c->lo[span] <= p) continue; /* inside a literal */
        if (b == ' ') {
            if (p >= 1 && name_byte(c, r, p - 1) && adjacent_names(c, r, p)) *unsure = 1;
        } else if (b == '.') { /* '..', not part of '...': an elision in an example */
            if (p + 1 <= c->L - 1 && buf[p + 1] == '.' && at(c, p + 2) != '.' && at(c, p - 1) != '.') *unsure = 1;
        } else if (b == '\\' || b == '$' || b == '?' || b == '`' || (b == '!' && at(c, p + 1) != '=')) {
            *unsure = 1; /* a continuation, or bytes no Python 3 code has outside strings */
        } else if (BINARY[b]) { /* an operator right after an opening bracket or a comma */
            int64_t before = skip(c, BLANK_ONLY, p - 1, s - 1, -1);
            if (before >= s && AFTER_OPEN[buf[before]]) *unsure = 1;
        } else if (OPEN[b]) {
            if (!*group_bad) {
                if (vec_reserve(&c->stack, c->stack.size + 1) < 0) return -1;
                c->stack.items[c->stack.size++] = OPEN[b];
            }
            ++*group_depth;
            int64_t *slot = level_slot(c, ++*depth);
            if (slot == NULL) return -1;
            *slot = 2 * r + (b == '(');
        } else if (CLOSE[b]) {
            if (--*group_depth < 0) *group_bad = 1;
            else if (!*group_bad && c->stack.items[--c->stack.size] != CLOSE[b]) *group_bad = 1;
            --*depth;
        } else if (b == ':' && at(c, p + 1) != '=') {
            if (*group_depth == 0) c->colon0[line]++;
            int64_t *slot = level_slot(c, *depth);
            if (slot == NULL) return -1;
            if (*slot >= 0 && (*slot & 1) && (*slot >> 1) >= line) c->flags[line] |= FLAGGED;
        } else if (b == ',' && *group_depth == 0) {
            c->comma0[line]++;
        }
    }
    /* a literal right after a name that is not a string prefix */
    for (int64_t k = 0; k < n_spans; k++) {
        int64_t start = skip(c, IDENT, c->lo[k] - 1, s - 1, -1) + 1, size = c->lo[k] - start;
        uint8_t a = at(c, start) | 32, b = at(c, start + 1) | 32;
        int prefix = PREFIX[a] && (size == 1 || (size == 2 && PREFIX[b] && a != b && (a == 'r' || b == 'r')));
        if (size > 0 && !prefix) *unsure = 1;
    }
    int64_t last = code_end - 1;
    c->last[r] = skip(c, SPACE, last, first - 1, -1);
    c->word[r] = NONE;
    if (flags & CODE) first_word(c, r);
    return 0;
}

/* The rules of row r that read its whole logical line (pyspans._lines from `ends_colon` on), and
   the colon-in-parentheses verdict of its line. */
static void line_rules(Scan *c, int64_t r) {
    int64_t line = c->line[r];
    uint8_t *unsure = c->unsure + c->group[r];
    if ((c->flags[line] & FLAGGED) && !(c->flags[line] & LAMBDA) && c->word[line] != DEF) *unsure = 1;
    if (!(c->flags[r] & CODE)) return;
    int64_t end_row = c->line_end[r], first = c->first[r];
    int64_t last = c->last[end_row];
    uint8_t end = c->buf[last < 0 ? 0 : (last >= c->L ? c->L - 1 : last)], head = at(c, first);
    int word = c->word[r], ends_colon = end == ':';
    int header = IN(word, COMPOUND | CLAUSES | BIT(MATCH) | BIT(CASE)) && ends_colon && c->colon0[r] == 1;
    if (word == ASYNC || ((word == MATCH || word == CASE) && ends_colon) || (IN(word, COMPOUND | CLAUSES) && !header)
        || ((word == NONE || word == DECORATOR) && ends_colon))
        *unsure = 1;
    uint8_t next = at(c, first + 1), next2 = at(c, first + 2);
    int dots = head == '.' && ((next == '.' && next2 == '.') || (next >= '0' && next <= '9')); /* ... or .5 */
    if (!(STARTS[head] || dots) || (c->flags[r] & OPERATOR_WORD) || DANGLING[end] || end == ',') *unsure = 1;
    if (IN(word, NEEDS_TEXT)) {
        int64_t e = c->e[r], from = first + WORD_SIZES[word];
        if (at(c, skip(c, BLANK_ONLY, from < e ? from : e, e, 1)) == ':') *unsure = 1;
    }
    int colons = c->colon0[r];
    int annotation = colons == 1 && IDENT[head] && end_row == r && end != ',' && c->comma0[r] == 0;
    if (word == NONE && (colons > 1 || (colons == 1 && !annotation))) *unsure = 1;
    if (header && word != MATCH && word != CASE) c->flags[r] |= HEADER;
}

/* Scratch of the group pass, n items each. */
typedef struct {
    int64_t *code, *closes, *before, *stack, *block_end, *end, *indent;
    int8_t *root;
} Blocks;

#define INDENT(i) (c->first[b->code[i]] - c->s[b->code[i]])
#define WORD(i) (c->word[b->code[i]])
#define IS_HEADER(i) (c->flags[b->code[i]] & HEADER)

/* pyspans._structure_unsure for the group of rows r0 .. r1 with m code rows: 1 when it leaves the
   subset. `any_code`: whether the batch has code rows (the numpy version checks nothing without). */
static int structure_unsure(const Scan *c, Blocks *b, int64_t r0, int64_t r1, int64_t m, int any_code) {
    if (!any_code) return 0;
    int64_t last_code = m ? b->code[m - 1] : r0 - 1;
    for (int64_t r = last_code + 1; r < r1; r++)
        if (c->flags[r] & COMMENT) return 1; /* a comment after the last code line */
    if (m == 0) return 0;
    if (IS_HEADER(m - 1) || WORD(m - 1) == DECORATOR) return 1;
    for (int64_t i = 1; i < m; i++) {
        int64_t d = INDENT(i), dp = INDENT(i - 1);
        if (IS_HEADER(i - 1) ? d <= dp : d > dp) return 1; /* an empty block, or a deeper line after no header */
        if (WORD(i - 1) == DECORATOR && (d != dp || !(WORD(i) == DEF || WORD(i) == CLASS || WORD(i) == DECORATOR)))
            return 1;
    }
    /* a header's block closes at the first code row indented less than the row below it */
    for (int64_t i = 0; i < m; i++) {
        b->closes[i] = m;
        if (!IS_HEADER(i)) continue;
        int64_t j = i + 1, level = INDENT(i + 1);
        while (j < m && INDENT(j) >= level) j++;
        b->closes[i] = j;
    }
    /* a clause continues the statement whose block its own line closes */
    int64_t top = 0; /* the code rows so far whose indent no later one is at or below */
    for (int64_t i = 0; i < m; i++) {
        int64_t d = INDENT(i);
        while (top > 0 && INDENT(b->stack[top - 1]) > d) top--;
        b->before[i] = top > 0 ? b->stack[top - 1] : -1; /* the last code row indented at most as deep */
        b->stack[top++] = i;
        int word = WORD(i);
        b->root[i] = (int8_t)word;
        if (!IN(word, CLAUSES)) continue;
        int64_t p = b->before[i];
        if (p < 0 || INDENT(p) != d || !IS_HEADER(p) || b->closes[p] != i) return 1;
        int root = b->root[p], pw = WORD(p);
        b->root[i] = (int8_t)root;
        int allowed = word == ELIF      ? root == IF && (pw == IF || pw == ELIF)
                      : word == ELSE    ? (root == IF && (pw == IF || pw == ELIF))
                                           || ((root == FOR || root == WHILE) && pw == root)
                                           || (root == TRY && pw == EXCEPT)
                      : word == EXCEPT  ? root == TRY && (pw == TRY || pw == EXCEPT)
                                        : root == TRY && (pw == TRY || pw == EXCEPT || pw == ELSE);
        if (!allowed) return 1;
    }
    return 0;
}

/* pyspans._spans for an answered group: its nodes into first / last from index k on; returns the
   new count. */
static int64_t group_spans(const Scan *c, Blocks *b, int64_t r0, int64_t r1, int64_t m, int64_t *first,
                           int64_t *last, int64_t k) {
    /* what each non-blank row's indent reads to the scanner: a comment's is at least that of the
       code after it; a row inside brackets closes nothing */
    int64_t next_code = INT64_MAX;
    for (int64_t r = r1 - 1; r >= r0; r--) {
        uint8_t f = c->flags[r];
        int64_t d = c->first[r] - c->s[r];
        if (f & CODE) next_code = d;
        b->indent[r - r0] = f & CONTINUED ? INT64_MAX : f & COMMENT ? (d > next_code ? d : next_code) : d;
    }
    for (int64_t i = 0; i < m; i++) {
        if (!IS_HEADER(i)) continue;
        int64_t level = INDENT(i + 1), end = b->code[i];
        for (int64_t r = b->code[i] + 1; r < r1; r++) {
            if (c->flags[r] & BLANK) continue;
            if (b->indent[r - r0] < level) break;
            end = r;
        }
        b->block_end[i] = end;
    }
    /* a node runs on through the clauses that follow at its header's indent */
    for (int64_t i = m - 1; i >= 0; i--) {
        if (!IS_HEADER(i)) continue;
        int64_t next = b->closes[i];
        int chained = next < m && IN(WORD(next), CLAUSES) && INDENT(next) == INDENT(i);
        b->end[i] = chained ? b->end[next] : b->block_end[i];
    }
    for (int64_t i = 0; i < m; i++) {
        if (WORD(i) == DECORATOR && (i == 0 || WORD(i - 1) != DECORATOR)) { /* decorators, then a definition */
            int64_t j = i;
            while (j < m && WORD(j) == DECORATOR) j++;
            if (j < m && IS_HEADER(j) && IN(WORD(j), COMPOUND)) {
                first[k] = b->code[i];
                last[k++] = b->end[j];
            }
        }
        if (IS_HEADER(i) && IN(WORD(i), COMPOUND)) {
            first[k] = b->code[i];
            last[k++] = b->end[i];
        }
    }
    return k;
}

/* The groups of rows from .. to - 1, once their rows' rules are read: each group's structure, its
   answer, and the nodes of an answered one into first / last from index k on; returns the new count. */
static int64_t finish_groups(const Scan *c, Blocks *b, int64_t from, int64_t to, int any_code, uint8_t *answered,
                             int64_t *first, int64_t *last, int64_t k) {
    for (int64_t r0 = from, r1; r0 < to; r0 = r1) {
        int64_t g = c->group[r0], m = 0;
        for (r1 = r0; r1 < to && c->group[r1] == g; r1++)
            if (c->flags[r1] & CODE) b->code[m++] = r1;
        if (!c->unsure[g] && structure_unsure(c, b, r0, r1, m, any_code)) c->unsure[g] = 1;
        answered[g] = !c->unsure[g];
        if (answered[g]) k = group_spans(c, b, r0, r1, m, first, last, k);
    }
    return k;
}

/* One part of the scan: the groups g0 .. g1 - 1 (rows r0 .. r1 - 1) with its own scratch; the
   per-row and per-group arrays are shared, each part writing its own rows and groups. */
typedef struct {
    Scan c; /* the shared input and arrays, and this part's scratch (lo, hi, quoted, stack, levels) */
    Blocks b;
    int64_t g0, g1, r0, r1;
    int64_t prefix_end;   /* (parts after the first) rows r0 .. prefix_end - 1: the blank rows before the
                             part's first line, whose line is the last one of an earlier part */
    int64_t deferred_end; /* groups g0 .. deferred_end - 1 hold such rows: the caller finishes them */
    int64_t last_line;    /* the part's last code or comment row (-1: none) */
    int64_t span_at, n_spans; /* the nodes of the groups it finished, at first / last + span_at */
    int failed;               /* out of memory */
} Part;

typedef struct {
    const Scan *c; /* the shared input and arrays; no scratch */
    const int64_t *cum, *group_row; /* (n_groups + 1) the groups' prefix sums of work, first rows */
    int any_code;
    uint8_t *answered;
    int64_t *first, *last;
    Part *parts;
} Job;

/* Part k of n_parts: its groups and rows, and its scratch (malloc'd by the calling thread, in the
   arena whose pages are mapped already); -1 when out of memory. */
static int new_part(Part *p, const Job *job, int k, int n_parts) {
    Scan *c = &p->c;
    Blocks *b = &p->b;
    *c = *job->c;
    p->g0 = credit_part_start(job->cum, c->n_groups, k, n_parts);
    p->g1 = credit_part_start(job->cum, c->n_groups, k + 1, n_parts);
    int64_t r0 = job->group_row[p->g0], r1 = job->group_row[p->g1], rows = r1 - r0, max_row = 0;
    p->r0 = p->prefix_end = p->span_at = r0;
    p->r1 = r1;
    p->deferred_end = p->g0;
    p->last_line = -1;
    if (rows == 0) return 0;
    for (int64_t r = r0; r < r1; r++)
        if (c->e[r] - c->s[r] > max_row) max_row = c->e[r] - c->s[r];
    c->lo = malloc((size_t)(max_row + 1) * 2 * sizeof(int64_t));
    c->quoted = malloc((size_t)max_row + 1);
    b->code = malloc((size_t)rows * 7 * sizeof(int64_t));
    b->root = malloc((size_t)rows);
    if (!c->lo || !c->quoted || !b->code || !b->root) return -1;
    c->hi = c->lo + max_row + 1;
    b->closes = b->code + rows;
    b->before = b->code + 2 * rows;
    b->block_end = b->code + 3 * rows;
    b->end = b->code + 4 * rows;
    b->indent = b->code + 5 * rows;
    b->stack = b->code + 6 * rows;
    return 0;
}

static void free_part(Part *p) {
    free(p->c.lo);
    free(p->c.quoted);
    free(p->c.stack.items);
    free(p->c.level_up.items);
    free(p->c.level_down.items);
    free(p->b.code);
    free(p->b.root);
}

/* Part k: the rows' rules of its groups, then the structure and nodes of those whose rows it could
   read to the end. Each group is read as by one thread: its bracket stack, group depth and line
   start afresh at its first row. The depth counted over all rows does not: it starts at 0 here,
   which shifts every level slot of the part alike, and a colon only reads a slot written at or
   after its line's first row, which is in its group (a group's first non-blank row starts a line),
   so slots of earlier parts are never the ones read. A group's leading blank rows take the line
   before them, in an earlier part for the blank rows a part starts with: the caller gives them
   their line and finishes their groups after the join. No Python API here; the scratch comes from
   the caller (new_part), and only the bracket stacks grow here (realloc). */
static void scan_part(void *arg, int k, int n_parts) {
    (void)n_parts;
    Job *job = (Job *)arg;
    Part *p = &job->parts[k];
    Scan *c = &p->c;
    Blocks *b = &p->b;
    int64_t r0 = p->r0, r1 = p->r1;
    if (r0 == r1) return;
    int64_t group_depth = 0, depth = 0, current_line = -1;
    int group_bad = 0;
    for (int64_t r = r0; r < r1; r++) {
        if (r > r0 && c->group[r] != c->group[r - 1]) { /* brackets must close within their group */
            if (group_bad || group_depth != 0) c->unsure[c->group[r - 1]] = 1;
            group_depth = 0;
            group_bad = 0;
            c->stack.size = 0;
        }
        if (scan_row(c, r, &group_depth, &group_bad, &depth, &current_line) < 0) {
            p->failed = 1;
            return;
        }
    }
    if (group_bad || group_depth != 0) c->unsure[c->group[r1 - 1]] = 1;
    p->last_line = current_line;
    if (k > 0) { /* the rows before its first line are blank (a group's first non-blank row starts one) */
        while (p->prefix_end < r1 && !(c->flags[p->prefix_end] & (CODE | COMMENT))) p->prefix_end++;
        if (p->prefix_end > r0) p->deferred_end = c->group[p->prefix_end - 1] + 1;
    }
    for (int64_t r = p->prefix_end; r < r1; r++) line_rules(c, r);
    p->span_at = job->group_row[p->deferred_end]; /* a group has no more nodes than rows */
    p->n_spans = finish_groups(c, b, p->span_at, r1, job->any_code, job->answered, job->first, job->last,
                               p->span_at) - p->span_at;
}

/* Whether any row is code: non-blank with a first byte other than '#' (such a row's group has only
   blank and comment rows before it, which open no bracket, so the first such row is code). */
static int has_code(const Scan *c) {
    for (int64_t r = 0; r < c->n; r++) {
        int64_t s = c->s[r], e = c->e[r], first = skip(c, BLANK_ONLY, s, e, 1);
        if (first < e && SPACE[at(c, first)]) first = skip(c, SPACE, first, e, 1);
        if (first < e && at(c, first) != '#') return 1;
    }
    return 0;
}

/* The whole scan in n_parts parts: answered (n_groups), first / last (n each); returns the nodes'
   count, -1 when out of memory. */
static int64_t scan(Scan *c, uint8_t *answered, int64_t *first, int64_t *last, int n_parts) {
    int64_t n = c->n, n_groups = c->n_groups, result = -1;
    c->first = malloc((size_t)n * 5 * sizeof(int64_t));
    c->colon0 = calloc((size_t)n * 2, sizeof(int32_t));
    c->word = malloc((size_t)n);
    c->flags = malloc((size_t)n);
    c->unsure = calloc((size_t)n_groups, 1);
    int64_t *cum = malloc((size_t)(n_groups + 1) * 2 * sizeof(int64_t));
    Part *parts = calloc((size_t)n_parts, sizeof(Part));
    if (!c->first || !c->colon0 || !c->word || !c->flags || !c->unsure || !cum || !parts) {
        n_parts = 0;
        goto done;
    }
    c->code_end = c->first + n;
    c->last = c->first + 2 * n;
    c->line = c->first + 3 * n;
    c->line_end = c->first + 4 * n;
    c->comma0 = c->colon0 + n;
    int64_t *group_row = cum + n_groups + 1;
    cum[0] = 0;
    for (int64_t r = 0; r < n; r++) { /* groups are 0 .. n_groups - 1 in order (well_formed) */
        int64_t g = c->group[r];
        if (r == 0 || g != c->group[r - 1]) {
            group_row[g] = r;
            cum[g + 1] = cum[g];
        }
        cum[g + 1] += c->e[r] - c->s[r] + ROW_WORK;
    }
    group_row[n_groups] = n;
    Job job = {.c = c, .cum = cum, .group_row = group_row, .any_code = has_code(c), .answered = answered,
               .first = first, .last = last, .parts = parts};
    for (int k = 0; k < n_parts; k++)
        if (new_part(&parts[k], &job, k, n_parts) < 0) goto done;
    credit_run_parts(scan_part, &job, n_parts);
    for (int k = 0; k < n_parts; k++)
        if (parts[k].failed) goto done;
    /* the parts in order: the groups each left, then its nodes after the nodes before them */
    int64_t count = 0, last_line = -1;
    for (int k = 0; k < n_parts; k++) {
        Part *p = &parts[k];
        if (p->prefix_end > p->r0) {
            int64_t line = last_line < 0 ? 0 : last_line;
            for (int64_t r = p->r0; r < p->prefix_end; r++) {
                c->line[r] = line;
                line_rules(&p->c, r);
            }
            count = finish_groups(&p->c, &p->b, p->r0, job.group_row[p->deferred_end], job.any_code, answered,
                                  first, last, count);
        }
        if (p->n_spans && count != p->span_at) {
            memmove(first + count, first + p->span_at, (size_t)p->n_spans * sizeof(int64_t));
            memmove(last + count, last + p->span_at, (size_t)p->n_spans * sizeof(int64_t));
        }
        count += p->n_spans;
        if (p->last_line >= 0) last_line = p->last_line;
    }
    result = count;
done:
    for (int k = 0; k < n_parts; k++) free_part(&parts[k]);
    free(parts);
    free(cum);
    free(c->first);
    free(c->colon0);
    free(c->word);
    free(c->flags);
    free(c->unsure);
    return result;
}

static int get_buffer(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, int writable, const char *name) {
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0)) < 0)
        return -1;
    if (view->itemsize != itemsize) {
        PyErr_Format(PyExc_ValueError, "python_spans: %s must have %zd-byte items", name, itemsize);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* Whether the rows and groups meet python_spans' contract: each row inside the buffer with its line
   break, groups 0 .. n_groups - 1 in order, each with rows. */
static int well_formed(const int64_t *s, const int64_t *e, const int64_t *group, int64_t n, int64_t L,
                       int64_t n_groups) {
    if (n == 0 || group[0] != 0 || group[n - 1] != n_groups - 1) return 0;
    for (int64_t r = 0; r < n; r++) {
        if (s[r] < 0 || s[r] > e[r] || e[r] >= L) return 0;
        if (r > 0 && group[r] != group[r - 1] && group[r] != group[r - 1] + 1) return 0;
    }
    return 1;
}

/* python_spans(data, starts, ends, group, keywords, answered, first, last) -> count of nodes, or None

   data: uint8 buffer; starts, ends, group: int64 buffers of the rows (as credit.pyspans.python_spans
   takes them); keywords: sorted uint64 buffer of the keywords packed little-endian; answered: writable
   bool buffer of n_groups; first, last: writable int64 buffers of at least n rows, the nodes' spans
   written in order. None (nothing written) where the input breaks the contract. */
static PyObject *python_spans(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *objs[8];
    if (!PyArg_ParseTuple(args, "OOOOOOOO", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5], &objs[6],
                          &objs[7]))
        return NULL;
    static const char *names[8] = {"data", "starts", "ends", "group", "keywords", "answered", "first", "last"};
    static const Py_ssize_t sizes[8] = {1, 8, 8, 8, 8, 1, 8, 8};
    Py_buffer views[8];
    int got = 0;
    for (; got < 8; got++)
        if (get_buffer(objs[got], &views[got], sizes[got], got >= 5, names[got]) < 0) break;
    PyObject *result = NULL;
    if (got < 8) goto done;
    int64_t n = views[1].len / 8, L = views[0].len, n_groups = views[5].len;
    if (views[2].len / 8 != n || views[3].len / 8 != n || views[6].len / 8 < n || views[7].len / 8 < n) {
        PyErr_SetString(PyExc_ValueError, "python_spans: starts, ends and group must have one length; first and "
                                          "last at least that");
        goto done;
    }
    const int64_t *starts = views[1].buf, *ends = views[2].buf;
    Scan c = {.buf = views[0].buf, .L = L, .n = n, .n_groups = n_groups, .s = starts, .e = ends,
              .group = views[3].buf, .keywords = views[4].buf, .n_keywords = views[4].len / 8};
    if (!well_formed(starts, ends, c.group, n, L, n_groups)) {
        result = Py_None;
        Py_INCREF(result);
        goto done;
    }
    int64_t work = 0;
    for (int64_t r = 0; r < n; r++) work += ends[r] - starts[r] + ROW_WORK;
    int n_parts = credit_parts(work, MIN_PART_WORK);
    int64_t count = -1;
    uint8_t *gathered = NULL;
    int64_t *bounds = NULL;
    Py_BEGIN_ALLOW_THREADS
    int in_order = 1;
    for (int64_t r = 1; r < n && in_order; r++) in_order = starts[r] > ends[r - 1];
    if (!in_order) { /* rows out of order: gathered, each with its line break, as the numpy version does */
        int64_t total = 0;
        for (int64_t r = 0; r < n; r++) total += ends[r] - starts[r] + 1;
        gathered = malloc((size_t)total);
        bounds = malloc((size_t)n * 2 * sizeof(int64_t));
        if (gathered != NULL && bounds != NULL) {
            int64_t offset = 0;
            for (int64_t r = 0; r < n; r++) {
                memcpy(gathered + offset, c.buf + starts[r], (size_t)(ends[r] - starts[r] + 1));
                bounds[r] = offset;
                offset += ends[r] - starts[r] + 1;
                bounds[n + r] = offset - 1;
            }
            c.buf = gathered;
            c.L = total;
            c.s = bounds;
            c.e = bounds + n;
        }
    }
    if (in_order || (gathered != NULL && bounds != NULL))
        count = scan(&c, views[5].buf, views[6].buf, views[7].buf, n_parts);
    free(gathered);
    free(bounds);
    Py_END_ALLOW_THREADS
    if (count < 0) {
        PyErr_NoMemory();
        goto done;
    }
    result = PyLong_FromLongLong(count);
done:
    for (int k = 0; k < got; k++) PyBuffer_Release(&views[k]);
    return result;
}

static PyMethodDef methods[] = {
    {"python_spans", python_spans, METH_VARARGS,
     "python_spans(data, starts, ends, group, keywords, answered, first, last) -> count of nodes, or None: "
     "credit.pyspans.python_spans into the given buffers (None where the input breaks its contract)."},
    CREDIT_LAST_PARTS_METHOD,
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "credit._pyspans", NULL, -1, methods,
                                     NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__pyspans(void) {
    init_tables();
    return PyModule_Create(&module);
}
