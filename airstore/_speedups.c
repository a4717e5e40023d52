/* airstore._speedups: the KV set hot path of MemoryStore and FileStore in C.
 *
 * FileStore's: ``bind_put`` makes the C implementation of the one put of a key
 * (airstore/_kvput.py) from its Python implementation, to which it hands what it declines;
 * ``file_put`` is its kernel on its own. MemoryStore's: ``mem_put``.
 *
 * Optional. The build compiles it where a C compiler is found; without it airstore runs the
 * same paths in Python (airstore/_accel.py picks). Each function takes only the common case:
 * exact dict/list/str/int/float/bool/None values, ASCII strings, at most MAX_DEPTH levels and
 * BUF_SIZE bytes of JSON. Anything else, and anything invalid (a NaN, an int beyond 64 bits, a
 * bad key), returns False having changed nothing, and the caller takes the Python path, which
 * raises the typed error or encodes what this leaves out. No Python code runs during the
 * validation walk (exact types only: no __eq__, __hash__, __iter__ or __float__ of a subclass
 * is called), so nothing can change the value under it. (Replacing a key's earlier value may run
 * that object's __del__ afterwards, as the Python path's store does.)
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <string.h>

#define BUF_SIZE 4096
#define MAX_DEPTH 64

typedef struct {
    char *p;
    char *end;
} Buf;

enum { OK = 0, BAIL = 1 };

static const char HEX[] = "0123456789abcdef";

static int put_raw(Buf *b, const char *s, Py_ssize_t n) {
    if (b->end - b->p < n) return BAIL;
    memcpy(b->p, s, (size_t)n);
    b->p += n;
    return OK;
}

static int put_char(Buf *b, char c) {
    if (b->p >= b->end) return BAIL;
    *b->p++ = c;
    return OK;
}

/* An exact str of ASCII characters as a JSON string (orjson's escapes); BAIL otherwise. */
static int put_str(Buf *b, PyObject *s) {
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(s) < 0) { /* a legacy string of the old C API */
        PyErr_Clear();
        return BAIL;
    }
#endif
    if (!PyUnicode_IS_ASCII(s)) return BAIL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    const unsigned char *src = (const unsigned char *)PyUnicode_DATA(s);
    /* at least the quotes and every character once; escapes are checked as they come */
    if (b->end - b->p < n + 2) return BAIL;
    char *p = b->p;
    *p++ = '"';
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char c = src[i];
        if (c >= 0x20 && c != '"' && c != '\\') {
            if (p >= b->end) return BAIL;
            *p++ = (char)c;
            continue;
        }
        if (b->end - p < 6) return BAIL;
        *p++ = '\\';
        switch (c) {
            case '"': *p++ = '"'; break;
            case '\\': *p++ = '\\'; break;
            case '\n': *p++ = 'n'; break;
            case '\r': *p++ = 'r'; break;
            case '\t': *p++ = 't'; break;
            case '\b': *p++ = 'b'; break;
            case '\f': *p++ = 'f'; break;
            default:
                *p++ = 'u';
                *p++ = '0';
                *p++ = '0';
                *p++ = HEX[c >> 4];
                *p++ = HEX[c & 15];
        }
    }
    if (p >= b->end) return BAIL;
    *p++ = '"';
    b->p = p;
    return OK;
}

static int put_int(Buf *b, PyObject *o) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow) return BAIL; /* orjson takes up to 2**64-1: let it decide */
    if (v == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return BAIL;
    }
    char tmp[24];
    char *t = tmp + sizeof tmp;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    do {
        *--t = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0) *--t = '-';
    return put_raw(b, t, (Py_ssize_t)(tmp + sizeof tmp - t));
}

static int put_float(Buf *b, PyObject *o) {
    double d = PyFloat_AS_DOUBLE(o);
    if (!isfinite(d)) return BAIL; /* the Python path raises the typed error */
    /* repr's shortest round-trip digits; ".0" kept so that it reads back as a float */
    char *s = PyOS_double_to_string(d, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);
    if (s == NULL) {
        PyErr_Clear();
        return BAIL;
    }
    int r = put_raw(b, s, (Py_ssize_t)strlen(s));
    PyMem_Free(s);
    return r;
}

static int put_value(Buf *b, PyObject *o, int depth) {
    PyTypeObject *t = Py_TYPE(o);
    if (t == &PyUnicode_Type) return put_str(b, o);
    if (t == &PyLong_Type) return put_int(b, o);
    if (o == Py_None) return put_raw(b, "null", 4);
    if (o == Py_True) return put_raw(b, "true", 4);
    if (o == Py_False) return put_raw(b, "false", 5);
    if (t == &PyFloat_Type) return put_float(b, o);
    if (depth >= MAX_DEPTH) return BAIL;
    if (t == &PyDict_Type) {
        Py_ssize_t pos = 0;
        PyObject *k, *v;
        int first = 1;
        if (put_char(b, '{')) return BAIL;
        while (PyDict_Next(o, &pos, &k, &v)) {
            if (!first && put_char(b, ',')) return BAIL;
            first = 0;
            if (!PyUnicode_CheckExact(k) || put_str(b, k) || put_char(b, ':')) return BAIL;
            if (put_value(b, v, depth + 1)) return BAIL;
        }
        return put_char(b, '}');
    }
    if (t == &PyList_Type) {
        Py_ssize_t n = PyList_GET_SIZE(o);
        if (put_char(b, '[')) return BAIL;
        for (Py_ssize_t i = 0; i < n; i++) {
            if (i && put_char(b, ',')) return BAIL;
            if (put_value(b, PyList_GET_ITEM(o, i), depth + 1)) return BAIL;
        }
        return put_char(b, ']');
    }
    return BAIL;
}

/* A key the fast path takes: an exact ASCII str of 1..max_key characters. */
static int key_ok(PyObject *key, Py_ssize_t max_key) {
    if (!PyUnicode_CheckExact(key)) return 0;
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(key) < 0) {
        PyErr_Clear();
        return 0;
    }
#endif
    if (!PyUnicode_IS_ASCII(key)) return 0;
    Py_ssize_t n = PyUnicode_GET_LENGTH(key);
    return n > 0 && n <= max_key;
}

/* The journal line ["key",value]\n of an already checked key. */
static int put_line(Buf *b, PyObject *key, PyObject *value) {
    if (put_char(b, '[') || put_str(b, key) || put_char(b, ',') || put_value(b, value, 0))
        return BAIL;
    return put_char(b, ']') || put_char(b, '\n');
}

/* The put of a TTL-less key: the journal line [key,value]\n appended to ``pending``,
 * ``items[key] = value``, ``entries[key] = line`` and the key's expiry, if it had one, dropped
 * from ``expires``. 1: done; 0: the key or value is outside the fast path, nothing changed;
 * -1: an error is set (a wrong argument type, out of memory, a pending buffer held by a view).
 */
static int put_kernel(PyObject *key, PyObject *value, PyObject *items, PyObject *entries,
                      PyObject *expires, PyObject *pending, Py_ssize_t max_key) {
    if (!PyDict_CheckExact(items) || !PyDict_CheckExact(entries) ||
        !PyDict_CheckExact(expires) || !PyByteArray_CheckExact(pending)) {
        PyErr_SetString(PyExc_TypeError, "file_put: items, entries, expires must be dicts "
                                         "and pending a bytearray");
        return -1;
    }
    if (!key_ok(key, max_key)) return 0;
    char buf[BUF_SIZE];
    Buf b = {buf, buf + BUF_SIZE};
    if (put_line(&b, key, value)) return 0;
    Py_ssize_t n = b.p - buf;
    PyObject *line = PyBytes_FromStringAndSize(buf, n);
    if (line == NULL) return -1;
    Py_ssize_t old = PyByteArray_GET_SIZE(pending);
    if (PyByteArray_Resize(pending, old + n) < 0) { /* e.g. a memoryview holds it */
        Py_DECREF(line);
        return -1;
    }
    memcpy(PyByteArray_AS_STRING(pending) + old, buf, (size_t)n);
    /* An exact str key: hashing and comparing it runs no Python code. */
    int had_expiry = PyDict_GET_SIZE(expires) ? PyDict_Contains(expires, key) : 0;
    if (had_expiry < 0 || PyDict_SetItem(items, key, value) < 0) {
        (void)PyByteArray_Resize(pending, old); /* shrinking what we grew: no line without its key */
        Py_DECREF(line);
        return -1;
    }
    if (PyDict_SetItem(entries, key, line) < 0) {
        /* Out of memory half-way: the value is in memory and its line queued. Drop the key's
         * earlier record so that no snapshot writes it: one re-encodes a key without one. */
        PyObject *type, *exc, *tb;
        PyErr_Fetch(&type, &exc, &tb);
        if (PyDict_DelItem(entries, key) < 0) PyErr_Clear();
        PyErr_Restore(type, exc, tb);
        Py_DECREF(line);
        return -1;
    }
    Py_DECREF(line);
    if (had_expiry && PyDict_DelItem(expires, key) < 0) return -1;
    return 1;
}

/* file_put(key, value, items, entries, expires, pending, max_key) -> bool
 *
 * The kernel above on its own: True when it put the key, False (nothing changed) when the key
 * or value is outside the fast path.
 */
static PyObject *file_put(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 7) {
        PyErr_SetString(PyExc_TypeError, "file_put takes 7 arguments");
        return NULL;
    }
    Py_ssize_t max_key = PyLong_AsSsize_t(args[6]);
    if (max_key == -1 && PyErr_Occurred()) return NULL;
    int r = put_kernel(args[0], args[1], args[2], args[3], args[4], args[5], max_key);
    if (r < 0) return NULL;
    return PyBool_FromLong(r);
}

/* Attribute names of a namespace (airstore._kvspace.KVSpace) that the bound put reads. */
static PyObject *s_items, *s_entries, *s_expires, *s_journal, *s_pending;

/* The put of airstore/_kvput.py, bound by bind_put: put(space, key, value, exp) -> None.
 * ``self`` is the tuple (python_put, max_key). A TTL-less put the kernel takes is done here;
 * everything else (an expiry, a value the kernel declines: it changed nothing) is handed to
 * python_put with the same arguments, which raises the typed error or puts what C leaves out.
 */
static PyObject *bound_put(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "put takes 4 arguments (space, key, value, exp)");
        return NULL;
    }
    if (args[3] == Py_None) {
        Py_ssize_t max_key = PyLong_AsSsize_t(PyTuple_GET_ITEM(self, 1));
        if (max_key == -1 && PyErr_Occurred()) return NULL;
        PyObject *space = args[0];
        PyObject *items = NULL, *entries = NULL, *expires = NULL, *journal = NULL;
        PyObject *pending = NULL;
        int r = -1;
        if ((items = PyObject_GetAttr(space, s_items)) != NULL &&
            (entries = PyObject_GetAttr(space, s_entries)) != NULL &&
            (expires = PyObject_GetAttr(space, s_expires)) != NULL &&
            (journal = PyObject_GetAttr(space, s_journal)) != NULL &&
            (pending = PyObject_GetAttr(journal, s_pending)) != NULL)
            r = put_kernel(args[1], args[2], items, entries, expires, pending, max_key);
        Py_XDECREF(items);
        Py_XDECREF(entries);
        Py_XDECREF(expires);
        Py_XDECREF(journal);
        Py_XDECREF(pending);
        if (r < 0) return NULL;
        if (r) Py_RETURN_NONE;
    }
    return PyObject_Vectorcall(PyTuple_GET_ITEM(self, 0), args, (size_t)nargs, NULL);
}

static PyMethodDef bound_put_def = {
    "put", (PyCFunction)(void (*)(void))bound_put, METH_FASTCALL,
    "put(space, key, value, exp): airstore._kvput's put, its common case in C."};

/* bind_put(python_put, max_key) -> put: the C implementation of the one put of a FileStore key
 * (airstore/_kvput.py), with the same signature as python_put, to which it hands what it
 * declines. */
static PyObject *bind_put(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyCallable_Check(args[0]) || !PyLong_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "bind_put takes (python_put, max_key)");
        return NULL;
    }
    PyObject *self = PyTuple_Pack(2, args[0], args[1]);
    if (self == NULL) return NULL;
    PyObject *name = PyModule_GetNameObject(module);
    if (name == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    PyObject *put = PyCFunction_NewEx(&bound_put_def, self, name);
    Py_DECREF(name);
    Py_DECREF(self);
    return put;
}

/* mem_put(key, value, items, max_key) -> bool
 *
 * MemoryStore's set without a TTL: ``items[key] = value`` once the key and value are checked
 * (encoded into a scratch buffer and dropped). False (nothing changed) outside the fast path.
 */
static PyObject *mem_put(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "mem_put takes 4 arguments");
        return NULL;
    }
    PyObject *key = args[0], *value = args[1], *items = args[2];
    if (!PyDict_CheckExact(items)) {
        PyErr_SetString(PyExc_TypeError, "mem_put: items must be a dict");
        return NULL;
    }
    Py_ssize_t max_key = PyLong_AsSsize_t(args[3]);
    if (max_key == -1 && PyErr_Occurred()) return NULL;
    if (!key_ok(key, max_key)) Py_RETURN_FALSE;
    char buf[BUF_SIZE];
    Buf b = {buf, buf + BUF_SIZE};
    if (put_value(&b, value, 0)) Py_RETURN_FALSE;
    if (PyDict_SetItem(items, key, value) < 0) return NULL;
    Py_RETURN_TRUE;
}

/* record(key, value) -> bytes | None: the journal line file_put would write, for tests. */
static PyObject *record(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "record takes 2 arguments");
        return NULL;
    }
    if (!key_ok(args[0], PY_SSIZE_T_MAX)) Py_RETURN_NONE;
    char buf[BUF_SIZE];
    Buf b = {buf, buf + BUF_SIZE};
    if (put_line(&b, args[0], args[1])) Py_RETURN_NONE;
    return PyBytes_FromStringAndSize(buf, b.p - buf);
}

static PyMethodDef methods[] = {
    {"file_put", (PyCFunction)(void (*)(void))file_put, METH_FASTCALL,
     "FileStore's TTL-less set in one call; False: take the Python path."},
    {"mem_put", (PyCFunction)(void (*)(void))mem_put, METH_FASTCALL,
     "MemoryStore's TTL-less set in one call; False: take the Python path."},
    {"bind_put", (PyCFunction)(void (*)(void))bind_put, METH_FASTCALL,
     "bind_put(python_put, max_key): the one put of a FileStore key, its common case in C."},
    {"record", (PyCFunction)(void (*)(void))record, METH_FASTCALL,
     "The journal line file_put writes, or None outside the fast path."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "airstore._speedups",
    .m_doc = "The KV set hot path in C (optional; see airstore/_accel.py).",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__speedups(void) {
    if ((s_items = PyUnicode_InternFromString("items")) == NULL ||
        (s_entries = PyUnicode_InternFromString("entries")) == NULL ||
        (s_expires = PyUnicode_InternFromString("expires")) == NULL ||
        (s_journal = PyUnicode_InternFromString("journal")) == NULL ||
        (s_pending = PyUnicode_InternFromString("pending")) == NULL)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddIntConstant(m, "BUF_SIZE", BUF_SIZE) < 0 ||
        PyModule_AddIntConstant(m, "MAX_DEPTH", MAX_DEPTH) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
