/* memspec._speedups: the accelerator's type walk in C (optional).
 *
 * plain(value, max_depth) is memspec._canonical_fast.plain, the walk that decides whether
 * orjson's bytes of a value are certainly its canonical JSON, in C: in Python it costs
 * about as much as orjson's whole encoding of a record. It only ever answers "plain" or
 * "ask the precise path", so a bug here could send a value to the wrong path but could not
 * word an error; tests/test_speedups.py proves it equal to the Python walk.
 *
 * The walk reads types and sizes only: it calls no Python code, so no value can change
 * under it, and it holds no new reference. Its recursion is bounded by max_depth, which is
 * itself bounded below.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* The deepest walk allowed: memspec asks for at most 64 levels; the C stack holds far more. */
#define MAX_DEPTH_SUPPORTED 1000

static int container_plain(PyObject *value, int level, int max_depth);

/* 1 when `item` is plain: an exact str, int, bool or None, or an exact dict, list or tuple
 * lying `level` levels deep whose items are plain; else 0. */
static int
item_plain(PyObject *item, int level, int max_depth)
{
    PyTypeObject *kind = Py_TYPE(item);
    if (item == Py_None || kind == &PyUnicode_Type || kind == &PyBool_Type
            || kind == &PyLong_Type) {
        return 1;
    }
    if (kind == &PyDict_Type || kind == &PyList_Type || kind == &PyTuple_Type) {
        return container_plain(item, level, max_depth);
    }
    return 0;  /* float, enum, UUID, date, a subclass, any other object */
}

static int
container_plain(PyObject *value, int level, int max_depth)
{
    if (level >= max_depth) {
        return 0;
    }
    if (PyDict_CheckExact(value)) {
        PyObject *key, *item;
        Py_ssize_t pos = 0;
        while (PyDict_Next(value, &pos, &key, &item)) {
            if (!item_plain(item, level + 1, max_depth)) {
                return 0;
            }
        }
        return 1;
    }
    /* An exact list or tuple: item_plain and plain check the type before calling here. */
    Py_ssize_t size = PySequence_Fast_GET_SIZE(value);
    PyObject **items = PySequence_Fast_ITEMS(value);
    for (Py_ssize_t i = 0; i < size; i++) {
        if (!item_plain(items[i], level + 1, max_depth)) {
            return 0;
        }
    }
    return 1;
}

PyDoc_STRVAR(plain_doc,
"plain(value, max_depth, /)\n--\n\n"
"True when value is an exact dict, list or tuple whose values are, recursively, exact\n"
"str, int, bool, None, dict, list or tuple, with no container max_depth or more levels\n"
"deep (value itself is level 0); False otherwise. Keys are not looked at.");

static PyObject *
plain(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "plain() takes 2 arguments (%zd given)", nargs);
        return NULL;
    }
    if (!PyLong_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "plain(): max_depth must be an int");
        return NULL;
    }
    long max_depth = PyLong_AsLong(args[1]);
    if (max_depth == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (max_depth < 1 || max_depth > MAX_DEPTH_SUPPORTED) {
        PyErr_Format(PyExc_ValueError, "plain(): max_depth must be from 1 to %d, not %ld",
                     MAX_DEPTH_SUPPORTED, max_depth);
        return NULL;
    }
    PyTypeObject *kind = Py_TYPE(args[0]);
    if (kind != &PyDict_Type && kind != &PyList_Type && kind != &PyTuple_Type) {
        Py_RETURN_FALSE;
    }
    return PyBool_FromLong(container_plain(args[0], 0, (int)max_depth));
}

static PyMethodDef speedups_methods[] = {
    {"plain", (PyCFunction)(void (*)(void))plain, METH_FASTCALL, plain_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef speedups_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "memspec._speedups",
    .m_doc = "The canonical-JSON accelerator's type walk in C (optional; see _canonical_fast).",
    .m_size = 0,
    .m_methods = speedups_methods,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    return PyModuleDef_Init(&speedups_module);
}
