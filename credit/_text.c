/* credit._text: credit.text.line_table in C, each distinct line read once.

The numpy version (credit/text.py, `line_table_numpy`) finds the distinct lines with a dict over
the strings, joins and encodes them, then normalises, hashes and tokenises them in vectorized
passes over all their bytes (searches for markers and quotes, prefix hashes, np.unique of the
contents' and the tokens' hashes): about 4.6 ms of a 45 ms credit.didpo call on the benchmark's
paper batch (8.6k lines) and 95 ms of 0.9 s on its large batch (140k lines). This reads the lines
in order: a table of (marker, text) finds each line's first copy (texts compared exactly); a new
text is encoded to UTF-8 (surrogates passed, as str.encode("utf-8", "surrogatepass") writes them),
normalised, and its content hashed; a table of content hashes finds each content's first copy,
and a new content is tokenised, its tokens' hashes kept in a third table; the distinct token
hashes are sorted last (a radix sort) for the token ids: about 0.7 and 11 ms (numpy: 5.5 and 80 ms
in the same runs, on a loaded machine). It gives exactly the same LineTable
(tests/credit/test_credit_text_native.py holds both versions equal on the benchmark's lines,
lines of the standard library and fuzzed lines), including what the numpy passes do that is not
obvious:

- contents are told apart by their 64-bit hash, as np.unique of the hashes tells them apart, and
  numbered by first appearance along the lines (the numpy version's marker-group renumbering
  gives that order); under a hash collision of two contents with different comment markers, the
  tokens would be the first line's here and the first marker group's there;
- `skip` and the indent count bytes; the comment's marker must lie whole after the skipped bytes,
  a quote anywhere from there to the marker keeps the comment; the indent is capped at 0xFFFF;
- whitespace is credit.text.WHITESPACE for the content's ends, but the tokenizer counts only
  " \t\r\x0b\x0c" as space: \x1c-\x1f inside a content are tokens of their own;
- a span's hash, sum_j c_j P^j over its bytes mod 2^64 (Horner from the end), is what the numpy
  version's (H[e] - H[s]) P^-s gives: P is odd, so P^-s exists mod 2^64 and the product is exact.

Input the numpy version would not read as a table (texts that are not exact str or that hold a
line break, markers outside MARKERS, a text shorter than `skip` bytes, a negative skip, 2^31 lines
or more) is not
read: the function returns None and credit.text runs numpy, which raises or answers. Optional:
credit.text falls back to numpy when this is not built.
*/
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define N_MARKERS 4
static const char *const MARKERS[N_MARKERS] = {NULL, "#", "//", "--"}; /* credit.text.MARKERS */
#define BLOCK_MARKER 2                                                 /* "//": block-comment lines dropped */
#define POWER 0x100000001B3ULL /* credit.text._POWER, _MIX_LENGTH */
#define MIX_LENGTH 0xC2B2AE3D27D4EB4FULL
#define MAX_INDENT 0xFFFF

static uint8_t IS_SPACE[256]; /* credit.text.WHITESPACE */
static uint8_t KIND[256];     /* credit.text._BYTE_KIND */
enum { SPACE, WORD, PUNCT };

static void init_tables(void) {
    for (const char *c = " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f"; *c; c++) IS_SPACE[(uint8_t)*c] = 1;
    for (int b = 0; b < 256; b++) {
        int word = b >= 128 || b == '_' || (b >= '0' && b <= '9') || (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z');
        KIND[b] = word ? WORD : PUNCT;
    }
    for (const char *c = " \t\r\x0b\x0c"; *c; c++) KIND[(uint8_t)*c] = SPACE;
}

/* credit.text._span_hash of the n bytes at b */
static uint64_t span_hash(const uint8_t *b, int64_t n) {
    const uint64_t P2 = POWER * POWER, P3 = P2 * POWER, P4 = P2 * P2;
    uint64_t x = 0;
    int64_t i = n;
    for (; i >= 4; i -= 4) /* four Horner steps at once: one multiply in the chain, not four */
        x = x * P4 + b[i - 1] * P3 + b[i - 2] * P2 + b[i - 3] * POWER + b[i - 4];
    for (; i > 0; i--) x = x * POWER + b[i - 1];
    x += (uint64_t)n * MIX_LENGTH;
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ULL;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBULL;
    x ^= x >> 31;
    return x;
}

/* Grows a malloc'd array of `item`-byte entries to hold at least `need`; -1 when out of memory. */
static int reserve(void *items, int64_t *capacity, int64_t need, size_t item) {
    if (need <= *capacity) return 0;
    int64_t cap = *capacity ? *capacity : 1024;
    while (cap < need) cap *= 2;
    void *grown = realloc(*(void **)items, (size_t)cap * item);
    if (grown == NULL) return -1;
    *(void **)items = grown;
    *capacity = cap;
    return 0;
}

/* A set of uint64 keys, numbered in order of insertion: open addressing over slots (-1: empty). */
typedef struct {
    int64_t *slots, mask;
    uint64_t *keys;
    int64_t n, cap;
} Table;

static inline int64_t slot_of(uint64_t key, int64_t mask) {
    return (int64_t)((key * 0x9E3779B97F4A7C15ULL) >> 17) & mask;
}

static int table_resize(Table *t, int64_t n_slots) {
    int64_t *slots = malloc((size_t)n_slots * sizeof(int64_t));
    if (slots == NULL) return -1;
    memset(slots, 0xFF, (size_t)n_slots * sizeof(int64_t));
    for (int64_t k = 0; k < t->n; k++) {
        int64_t i = slot_of(t->keys[k], n_slots - 1);
        while (slots[i] >= 0) i = (i + 1) & (n_slots - 1);
        slots[i] = k;
    }
    free(t->slots);
    t->slots = slots;
    t->mask = n_slots - 1;
    return 0;
}

/* The number of `key`, added when new (the set then holds one more); -1 when out of memory. */
static inline int64_t table_index(Table *t, uint64_t key) {
    if (t->slots == NULL || 2 * (t->n + 1) > t->mask + 1) /* at most half full */
        if (table_resize(t, t->slots ? 2 * (t->mask + 1) : 1024) < 0) return -1;
    int64_t i = slot_of(key, t->mask);
    for (; t->slots[i] >= 0; i = (i + 1) & t->mask)
        if (t->keys[t->slots[i]] == key) return t->slots[i];
    if (reserve(&t->keys, &t->cap, t->n + 1, sizeof(uint64_t)) < 0) return -1;
    t->slots[i] = t->n;
    t->keys[t->n] = key;
    return t->n++;
}

/* The distinct (marker, text) pairs, their UTF-8 bytes one after another (bytes[start[k]:start[k + 1]]). */
typedef struct {
    int64_t n, cap, size, size_cap;
    int8_t *marker;
    int64_t *start;
    uint8_t *bytes;
} Lines;

/* str.encode("utf-8", "surrogatepass") of text: its own data when ASCII, else written past the
   pairs' bytes (lines->bytes + lines->size, not yet counted). NULL when out of memory. */
static const uint8_t *utf8(Lines *lines, PyObject *text, int64_t *size) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    if (PyUnicode_IS_ASCII(text)) {
        *size = n;
        return data;
    }
    if (reserve(&lines->bytes, &lines->size_cap, lines->size + 4 * (int64_t)n, 1) < 0) return NULL;
    uint8_t *out = lines->bytes + lines->size;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c < 0x80) {
            *out++ = (uint8_t)c;
        } else if (c < 0x800) {
            *out++ = (uint8_t)(0xC0 | (c >> 6));
            *out++ = (uint8_t)(0x80 | (c & 0x3F));
        } else if (c < 0x10000) { /* surrogates too, as surrogatepass writes them */
            *out++ = (uint8_t)(0xE0 | (c >> 12));
            *out++ = (uint8_t)(0x80 | ((c >> 6) & 0x3F));
            *out++ = (uint8_t)(0x80 | (c & 0x3F));
        } else {
            *out++ = (uint8_t)(0xF0 | (c >> 18));
            *out++ = (uint8_t)(0x80 | ((c >> 12) & 0x3F));
            *out++ = (uint8_t)(0x80 | ((c >> 6) & 0x3F));
            *out++ = (uint8_t)(0x80 | (c & 0x3F));
        }
    }
    *size = out - (lines->bytes + lines->size);
    return lines->bytes + lines->size;
}

/* Appends the pair (b[0:size], marker): b is a str's data or already in place past the pairs'
   bytes (`utf8`). -1 when out of memory. */
static int add_pair(Lines *lines, const uint8_t *b, int64_t size, int64_t marker) {
    int64_t k = lines->n;
    if (k == lines->cap) {
        int64_t cap = lines->cap ? 2 * lines->cap : 1024;
        void *grown;
        if ((grown = realloc(lines->marker, (size_t)cap)) == NULL) return -1;
        lines->marker = grown;
        if ((grown = realloc(lines->start, (size_t)(cap + 1) * sizeof(int64_t))) == NULL) return -1;
        lines->start = grown;
        lines->cap = cap;
    }
    if (b != lines->bytes + lines->size) {
        if (reserve(&lines->bytes, &lines->size_cap, lines->size + size, 1) < 0) return -1;
        memcpy(lines->bytes + lines->size, b, (size_t)size);
    }
    lines->start[k] = lines->size;
    lines->size += size;
    lines->start[k + 1] = lines->size;
    lines->marker[k] = (int8_t)marker;
    lines->n++;
    return 0;
}

/* Each line's distinct pair (line_key), numbered by first appearance. Returns 0; 1 when a line is
   outside the contract (not an exact str, a marker outside MARKERS, a line break, fewer than skip
   bytes, 2^31 lines or more); -1 with the error set.

   Texts are compared by their UTF-8 bytes (surrogates passed: one text, one encoding) against the
   pairs' bytes, not against the str of each pair's first line, scattered in memory. A slot holds a
   pair's number + 1 (0: empty) and the high half of its key's hash: a probe reads one slot. The
   str objects, then the slots of the lines AHEAD on are prefetched: both are scattered (the slots
   take 2 MB at the large batch). */
#define AHEAD 16
static int distinct_lines(PyObject *const *texts, const int64_t *markers, int64_t L, int64_t skip, Lines *lines,
                          int64_t *line_key) {
    if (L >= INT32_MAX) return 1;
    for (int64_t r = 0; r < L; r++) { /* each line's key hash, in line_key until its pair is known */
        if (r + AHEAD < L) __builtin_prefetch(texts[r + AHEAD]);
        PyObject *text = texts[r];
        if (!PyUnicode_CheckExact(text) || markers[r] < 0 || markers[r] >= N_MARKERS) return 1;
#if PY_VERSION_HEX < 0x030C0000
        if (PyUnicode_READY(text) < 0) return -1;
#endif
        Py_hash_t hash = PyObject_Hash(text); /* cached in the str; an exact str's cannot fail */
        uint64_t key = ((uint64_t)hash ^ ((uint64_t)markers[r] * 0x9E3779B97F4A7C15ULL)) * 0xBF58476D1CE4E5B9ULL;
        line_key[r] = (int64_t)key;
    }
    int64_t n_slots = 1024;
    while (n_slots < 2 * L) n_slots *= 2;
    uint64_t *slots = calloc((size_t)n_slots, sizeof(uint64_t)), mask = (uint64_t)n_slots - 1;
    if (slots == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    int status = 0;
    for (int64_t r = 0; r < L && status == 0; r++) {
        if (r + AHEAD < L) {
            __builtin_prefetch(&slots[(uint64_t)line_key[r + AHEAD] & mask]);
            __builtin_prefetch(texts[r + AHEAD]);
        }
        uint64_t hash = (uint64_t)line_key[r], high = hash >> 32 << 32;
        int64_t marker = markers[r], size;
        const uint8_t *b = utf8(lines, texts[r], &size);
        if (b == NULL) {
            PyErr_NoMemory();
            status = -1;
            break;
        }
        uint64_t i = hash & mask;
        for (; slots[i] != 0; i = (i + 1) & mask) {
            int64_t k = (int64_t)(slots[i] & 0xFFFFFFFFu) - 1;
            if ((slots[i] & ~(uint64_t)0xFFFFFFFFu) == high && lines->marker[k] == marker &&
                lines->start[k + 1] - lines->start[k] == size &&
                memcmp(lines->bytes + lines->start[k], b, (size_t)size) == 0)
                break;
        }
        if (slots[i] == 0) { /* a new pair */
            int64_t k = lines->n;
            if (add_pair(lines, b, size, marker) < 0) {
                PyErr_NoMemory();
                status = -1;
                break;
            }
            if (size < skip || memchr(lines->bytes + lines->start[k], '\n', (size_t)size) != NULL) status = 1;
            slots[i] = high | (uint64_t)(k + 1);
        }
        line_key[r] = (int64_t)(slots[i] & 0xFFFFFFFFu) - 1;
    }
    free(slots);
    return status;
}

/* credit.text._content_spans of one line's bytes b[0:n]: its content's span [*first, *last]
   (inclusive); 0 when it has none (blank, comment only, or a block-comment line). */
static int content_span(const uint8_t *b, int64_t n, int64_t skip, int marker, int64_t *first, int64_t *last) {
    int64_t cut = n;
    if (marker > 0) {
        const char *m = MARKERS[marker];
        int64_t size = (int64_t)strlen(m), pos = skip;
        for (; pos + size <= n; pos++)
            if (b[pos] == (uint8_t)m[0] && (size == 1 || b[pos + 1] == (uint8_t)m[1])) break;
        if (pos + size <= n) {
            int64_t q = skip;
            while (q < pos && b[q] != '"' && b[q] != '\'') q++;
            if (q == pos) cut = pos;
        }
    }
    int64_t f = skip;
    while (f < cut && IS_SPACE[b[f]]) f++;
    if (f >= cut) return 0;
    int64_t l = cut - 1;
    while (l > f && IS_SPACE[b[l]]) l--;
    if (marker == BLOCK_MARKER && (b[f] == '*' || (b[f] == '/' && f + 1 < n && b[f + 1] == '*'))) return 0;
    *first = f;
    *last = l;
    return 1;
}

/* The contents, in id order: hashes (the table's keys), token CSR, each token as its hash's number. */
typedef struct {
    Table contents, tokens;
    int64_t *ptr, ptr_cap, *token, n_token, token_cap;
} Out;

/* credit.text._tokenize_bytes of one content b[0:n], appended to out; -1 when out of memory. */
static int tokenize(Out *out, const uint8_t *b, int64_t n) {
    if (reserve(&out->token, &out->token_cap, out->n_token + n, sizeof(int64_t)) < 0) return -1; /* <= n tokens */
    for (int64_t i = 0; i < n;) {
        int64_t j = i + 1;
        if (KIND[b[i]] == SPACE) {
            i = j;
            continue;
        }
        if (KIND[b[i]] == WORD)
            while (j < n && KIND[b[j]] == WORD) j++;
        int64_t id = table_index(&out->tokens, span_hash(b + i, j - i));
        if (id < 0) return -1;
        out->token[out->n_token++] = id;
        i = j;
    }
    return 0;
}

/* rank[k]: the position of keys[k] among the n distinct keys in increasing order (an LSD radix
   sort, a byte a pass); -1 when out of memory. */
static int ranks(const uint64_t *keys, int64_t n, int64_t *rank) {
    size_t size = (size_t)(n ? n : 1) * sizeof(int64_t);
    int64_t *order = malloc(size), *spare = malloc(size);
    int64_t count[256];
    int status = -1;
    if (order == NULL || spare == NULL) goto done;
    for (int64_t k = 0; k < n; k++) order[k] = k;
    for (int shift = 0; shift < 64; shift += 8) {
        memset(count, 0, sizeof count);
        for (int64_t k = 0; k < n; k++) count[(keys[k] >> shift) & 0xFF]++;
        int64_t total = 0;
        for (int d = 0; d < 256; d++) {
            int64_t c = count[d];
            count[d] = total;
            total += c;
        }
        for (int64_t k = 0; k < n; k++) spare[count[(keys[order[k]] >> shift) & 0xFF]++] = order[k];
        int64_t *swap = order;
        order = spare;
        spare = swap;
    }
    for (int64_t k = 0; k < n; k++) rank[order[k]] = k;
    status = 0;
done:
    free(order);
    free(spare);
    return status;
}

/* Normalises, hashes and tokenises the distinct lines (no Python objects: run without the GIL);
   writes each line's content id and indent. -1 when out of memory. */
static int read_lines(const Lines *lines, const int64_t *line_key, int64_t L, int64_t skip, Out *out,
                      int64_t *content, int64_t *indent) {
    int64_t *key_content = malloc((size_t)(lines->n ? lines->n : 1) * sizeof(int64_t));
    int64_t *key_indent = malloc((size_t)(lines->n ? lines->n : 1) * sizeof(int64_t));
    int64_t *rank = NULL;
    int status = -1;
    if (key_content == NULL || key_indent == NULL || reserve(&out->ptr, &out->ptr_cap, 1, sizeof(int64_t)) < 0)
        goto done;
    out->ptr[0] = 0;
    for (int64_t k = 0; k < lines->n; k++) {
        const uint8_t *b = lines->bytes + lines->start[k];
        int64_t first, last;
        key_content[k] = -1;
        key_indent[k] = 0;
        if (!content_span(b, lines->start[k + 1] - lines->start[k], skip, lines->marker[k], &first, &last)) continue;
        int64_t before = out->contents.n;
        int64_t id = table_index(&out->contents, span_hash(b + first, last + 1 - first));
        if (id < 0) goto done;
        if (id == before) { /* a new content: its tokens */
            if (tokenize(out, b + first, last + 1 - first) < 0 ||
                reserve(&out->ptr, &out->ptr_cap, id + 2, sizeof(int64_t)) < 0)
                goto done;
            out->ptr[id + 1] = out->n_token;
        }
        key_content[k] = id;
        key_indent[k] = first - skip < MAX_INDENT ? first - skip : MAX_INDENT;
    }
    for (int64_t r = 0; r < L; r++) {
        content[r] = key_content[line_key[r]];
        indent[r] = key_indent[line_key[r]];
    }
    /* token ids: ranks of the distinct token hashes, as np.unique numbers them */
    rank = malloc((size_t)(out->tokens.n ? out->tokens.n : 1) * sizeof(int64_t));
    if (rank == NULL || ranks(out->tokens.keys, out->tokens.n, rank) < 0) goto done;
    for (int64_t t = 0; t < out->n_token; t++) out->token[t] = rank[out->token[t]];
    status = 0;
done:
    free(key_content);
    free(key_indent);
    free(rank);
    return status;
}

static PyObject *bytearray_of(const void *items, int64_t n, size_t item) {
    PyObject *array = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(n * (int64_t)item));
    if (array != NULL && n > 0) memcpy(PyByteArray_AS_STRING(array), items, (size_t)n * item);
    return array;
}

static int get_buffer(PyObject *obj, Py_buffer *view, int writable, const char *name) {
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0)) < 0)
        return -1;
    if (view->itemsize != 8) {
        PyErr_Format(PyExc_ValueError, "line_table: %s must have 8-byte items", name);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* line_table(texts, markers, skip, content, indent) -> (hashes, token_ptr, tokens, n_tokens), or None

   texts: list or tuple of str; markers: int64 buffer of their codes into credit.text.MARKERS; skip:
   the bytes in front of each text that are not part of it; content, indent: writable int64
   buffers of len(texts), filled. hashes (uint64), token_ptr and tokens (int64) come back as
   bytearrays. None (the buffers then hold anything) where the input breaks the contract. */
static PyObject *line_table(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *texts, *objs[3];
    Py_ssize_t skip;
    if (!PyArg_ParseTuple(args, "OOnOO", &texts, &objs[0], &skip, &objs[1], &objs[2])) return NULL;
    if (!PyList_Check(texts) && !PyTuple_Check(texts)) {
        PyErr_SetString(PyExc_TypeError, "line_table: texts must be a list or a tuple");
        return NULL;
    }
    static const char *names[3] = {"markers", "content", "indent"};
    Py_buffer views[3];
    int got = 0;
    for (; got < 3; got++)
        if (get_buffer(objs[got], &views[got], got > 0, names[got]) < 0) break;
    PyObject *result = NULL;
    Lines lines = {0};
    Out out;
    memset(&out, 0, sizeof out);
    int64_t *line_key = NULL;
    if (got < 3) goto done;
    int64_t L = (int64_t)PySequence_Fast_GET_SIZE(texts);
    if (views[0].len / 8 != L || views[1].len / 8 != L || views[2].len / 8 != L) {
        PyErr_SetString(PyExc_ValueError, "line_table: markers, content and indent must have one entry a text");
        goto done;
    }
    line_key = malloc((size_t)(L ? L : 1) * sizeof(int64_t));
    if (line_key == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    int status = skip < 0 ? 1 : distinct_lines(PySequence_Fast_ITEMS(texts), views[0].buf, L, skip, &lines, line_key);
    if (status == 0) {
        Py_BEGIN_ALLOW_THREADS
        status = read_lines(&lines, line_key, L, skip, &out, views[1].buf, views[2].buf);
        Py_END_ALLOW_THREADS
    }
    if (status < 0) { /* distinct_lines set the error; read_lines only runs out of memory */
        if (!PyErr_Occurred()) PyErr_NoMemory();
        goto done;
    }
    if (status > 0) {
        result = Py_None;
        Py_INCREF(result);
        goto done;
    }
    PyObject *hashes = bytearray_of(out.contents.keys, out.contents.n, sizeof(uint64_t));
    PyObject *ptr = bytearray_of(out.ptr, out.contents.n + 1, sizeof(int64_t));
    PyObject *tokens = bytearray_of(out.token, out.n_token, sizeof(int64_t));
    if (hashes != NULL && ptr != NULL && tokens != NULL)
        result = Py_BuildValue("(OOOn)", hashes, ptr, tokens, (Py_ssize_t)(out.tokens.n > 1 ? out.tokens.n : 1));
    Py_XDECREF(hashes);
    Py_XDECREF(ptr);
    Py_XDECREF(tokens);
done:
    for (int k = 0; k < got; k++) PyBuffer_Release(&views[k]);
    free(line_key);
    free(lines.marker);
    free(lines.start);
    free(lines.bytes);
    free(out.contents.slots);
    free(out.contents.keys);
    free(out.tokens.slots);
    free(out.tokens.keys);
    free(out.ptr);
    free(out.token);
    return result;
}

static PyMethodDef methods[] = {
    {"line_table", line_table, METH_VARARGS,
     "line_table(texts, markers, skip, content, indent) -> (hashes, token_ptr, tokens, n_tokens) or None: "
     "credit.text.line_table, content ids and indents into the given buffers, the contents' arrays as "
     "bytearrays (None where the input breaks its contract)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "credit._text", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__text(void) {
    init_tables();
    return PyModule_Create(&module);
}
