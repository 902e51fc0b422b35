"""Exact, order-independent sums of doubles: a long fixed-point accumulator (Kulisch's).

Why: a sum of doubles rounds after every addition, so its value depends on the order of the terms,
and numba's fastmath (reassociation, contraction) may reorder a sum differently in two compiled
copies of the same loop. The stress sum over contacts feeds the stress servo, and granular
dynamics amplify a last-bit difference in it to order one within a thousand steps. Summed here,
every term is added exactly into integers, and integer addition is associative: any split of the
terms (over rows, over MPI ranks, in any order) gives the same exact sum, and exact_value rounds
that one number to the nearest double. An MPI run adds the ranks' accumulators with an integer
reduction and gets the serial run's value bit for bit.

Layout: a row of N_LIMBS int64 limbs holds the integer sum_k limbs[k] 2^(32 k), the value times
2^1074 (the smallest subnormal is one unit), so every finite double is an integer in it. A term
touches three limbs, each addition below 2^33 in magnitude, so a row takes 2^29 terms between
normalisations without overflow. Only integer operations touch the limbs: fastmath does not
apply to them.
"""

import math

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from .._jit import njit

# bits of the largest finite double times 2^1074: 2098; 66 limbs of 32 bits, one more for carries
N_LIMBS = 67
LIMB_BITS = 32
LIMB_MASK = 0xFFFFFFFF
# value = integer * 2^-EXP_OFFSET
EXP_OFFSET = 1074


@intrinsic
def float_bits(typingctx, x):
    """The IEEE 754 bits of a float64 as an int64 (a register move)."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))
    return types.int64(types.float64), codegen


def new_accumulator(rows):
    """Zeroed limbs for `rows` exact sums."""
    return np.zeros((rows, N_LIMBS), dtype=np.int64)


@njit(_nrt=False, inline="always")
def exact_add(limbs, row, x):
    """limbs[row] += x exactly (x finite). Branch-free: the sign of a stress term is a coin toss."""
    b = float_bits(x)
    e = (b >> 52) & 0x7FF
    normal = np.int64(e != 0)
    # x = m 2^(p - 1074): a normal number's hidden bit, a subnormal's exponent as that of e = 1
    m = (b & 0xFFFFFFFFFFFFF) | (normal << 52)
    p = e - normal
    k = p >> 5
    s = p & 31
    lo = (m & LIMB_MASK) << s
    hi = (m >> 32) << s
    sgn = b >> 63  # 0 or -1: (a ^ sgn) - sgn is a or -a
    a0 = lo & LIMB_MASK
    a1 = (lo >> 32) + (hi & LIMB_MASK)
    a2 = hi >> 32
    limbs[row, k] += (a0 ^ sgn) - sgn
    limbs[row, k + 1] += (a1 ^ sgn) - sgn
    limbs[row, k + 2] += (a2 ^ sgn) - sgn


@njit(_nrt=False, inline="always")
def _normalize(limbs, row):
    """Carry so that every limb but the top one is in [0, 2^32) (the value is unchanged); the top
    limb is then negative exactly when the value is."""
    n = limbs.shape[1]
    carry = np.int64(0)
    for k in range(n - 1):
        v = limbs[row, k] + carry
        limbs[row, k] = v & LIMB_MASK
        carry = v >> 32
    limbs[row, n - 1] += carry


@njit(_nrt=False, inline="always")
def _negate(limbs, row):
    for k in range(limbs.shape[1]):
        limbs[row, k] = -limbs[row, k]


@njit(_nrt=False)
def exact_value(limbs, row):
    """The exact sum held in limbs[row], rounded to the nearest double (ties to even; a subnormal
    result may be rounded twice). A function of the sum alone, not of how the limbs hold it: the
    limbs are normalised in place first (the sum they hold is unchanged)."""
    n = limbs.shape[1]
    _normalize(limbs, row)
    neg = limbs[row, n - 1] < 0
    if neg:
        _negate(limbs, row)
        _normalize(limbs, row)
    h = n - 1
    while h >= 0 and limbs[row, h] == 0:
        h -= 1
    result = 0.0
    if h >= 0:
        top = limbs[row, h]
        b = 31
        while (top >> b) == 0:
            b -= 1
        # the 63 bits from the leading one down, then a sticky bit for everything below them, so
        # that the one rounding of the int64 -> double conversion is the rounding of the exact sum
        lo_bit = LIMB_BITS * h + b - 62
        x = np.int64(0)
        sticky = np.int64(0)
        for k in range(h, -1, -1):
            v = limbs[row, k]
            if v == 0:
                continue
            base = LIMB_BITS * k
            if base >= lo_bit:
                x |= v << (base - lo_bit)
            elif base + LIMB_BITS <= lo_bit:
                sticky = 1
            else:
                r = lo_bit - base
                x |= v >> r
                if v & ((np.int64(1) << r) - 1):
                    sticky = 1
        result = math.ldexp(float(x | sticky), lo_bit - EXP_OFFSET)
    if neg:
        _negate(limbs, row)
        result = -result
    return result


@njit(_nrt=False, inline="always")
def exact_add_outer(limbs, fx, fy, fz, lx, ly, lz, w0, w1, w2, w3, w4, w5, w6, w7, w8):
    """limbs[0:9] += f (x) l (row-major), exactly: a contact's share of a stress sum. Only the
    components whose flag w0..w8 is set are added (the flags are the caller's loop invariants, so a
    pass asked for no stress adds nothing)."""
    if w0:
        exact_add(limbs, 0, fx * lx)
    if w1:
        exact_add(limbs, 1, fx * ly)
    if w2:
        exact_add(limbs, 2, fx * lz)
    if w3:
        exact_add(limbs, 3, fy * lx)
    if w4:
        exact_add(limbs, 4, fy * ly)
    if w5:
        exact_add(limbs, 5, fy * lz)
    if w6:
        exact_add(limbs, 6, fz * lx)
    if w7:
        exact_add(limbs, 7, fz * ly)
    if w8:
        exact_add(limbs, 8, fz * lz)


@njit(_nrt=False)
def exact_add_all(limbs, row, values):
    """limbs[row] += every value of the 1-D array values, exactly (values finite)."""
    for k in range(values.shape[0]):
        exact_add(limbs, row, values[k])
