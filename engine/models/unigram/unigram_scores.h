/* unigram_scores.h: a JSON number's text -> the f64 serde_json's default parser gives.
 *
 * Why: tokenizers reads piece scores with serde_json, which is not correctly rounded
 * (without its float_roundtrip feature, which tokenizers does not enable): it keeps up
 * to 19-20 significant digits in a u64, converts that to f64 (one rounding) and then
 * multiplies or divides by a power of ten (a second rounding). On T5's file a quarter
 * of the scores land one unit in the last place away from the correctly rounded value,
 * and Viterbi's near-ties ("▁-------") follow those last bits. The steps below are
 * serde_json 1.x de.rs: parse_integer, parse_long_integer, parse_decimal,
 * parse_decimal_overflow, parse_exponent(_overflow), f64_from_parts; integers take the
 * same path (serde's u64/i64 "as f64" rounds the same way). _scores_reference.py is the
 * same algorithm in plain Python, the tests' oracle.
 */
#ifndef TOKSERVE_UNIGRAM_SCORES_H
#define TOKSERVE_UNIGRAM_SCORES_H

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstdio>

enum { UG_NUM_OK = 0, UG_NUM_INVALID = 1, UG_NUM_RANGE = 2 };

/* Rust's f64 literals 1e0 ..= 1e308 (strtod rounds correctly, as rustc does). */
static inline const double *ug_pow10() {
    static const struct Table {
        double v[309];
        Table() {
            char text[8];
            for (int k = 0; k < 309; k++) {
                snprintf(text, sizeof text, "1e%d", k);
                v[k] = strtod(text, nullptr);
            }
        }
    } table;
    return table.v;
}

/* serde_json's overflow!(significand * 10 + digit, u64::MAX) */
static inline bool ug_u64_overflows(uint64_t significand, unsigned digit) {
    return significand >= UINT64_MAX / 10 &&
           (significand > UINT64_MAX / 10 || digit > UINT64_MAX % 10);
}

static inline bool ug_digit(char c) { return c >= '0' && c <= '9'; }

/* s[0:n] is one JSON number: *out as serde_json reads it. */
static inline int ug_json_f64(const char *s, size_t n, double *out) {
    size_t i = 0;
    bool negative = n > 0 && s[0] == '-';
    i += negative;
    if (i >= n || !ug_digit(s[i])) return UG_NUM_INVALID;
    if (s[i] == '0' && i + 1 < n && ug_digit(s[i + 1])) return UG_NUM_INVALID;
    uint64_t significand = 0;
    int64_t exponent = 0;
    bool long_integer = false;
    for (; i < n && ug_digit(s[i]); i++) {
        unsigned digit = (unsigned)(s[i] - '0');
        if (!long_integer && ug_u64_overflows(significand, digit)) long_integer = true;
        if (long_integer)
            exponent++;  /* parse_long_integer: later integer digits only scale */
        else
            significand = significand * 10 + digit;
    }
    if (i < n && s[i] == '.') {
        size_t start = ++i;
        bool ignored = false;  /* parse_decimal_overflow: every digit after one ignored */
        for (; i < n && ug_digit(s[i]); i++) {
            unsigned digit = (unsigned)(s[i] - '0');
            if (ignored || ug_u64_overflows(significand, digit)) {
                ignored = true;
                continue;
            }
            significand = significand * 10 + digit;
            exponent--;
        }
        if (i == start) return UG_NUM_INVALID;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        bool positive_exp = true;
        if (i < n && (s[i] == '+' || s[i] == '-')) positive_exp = s[i++] == '+';
        if (i >= n || !ug_digit(s[i])) return UG_NUM_INVALID;
        int64_t value = 0;
        bool overflow = false;
        for (; i < n && ug_digit(s[i]); i++) {
            unsigned digit = (unsigned)(s[i] - '0');
            if (!overflow && value * 10 + digit > INT32_MAX) overflow = true;
            if (!overflow) value = value * 10 + digit;
        }
        if (i != n) return UG_NUM_INVALID;
        if (overflow) {  /* parse_exponent_overflow */
            if (significand != 0 && positive_exp) return UG_NUM_RANGE;
            *out = negative ? -0.0 : 0.0;
            return UG_NUM_OK;
        }
        exponent += positive_exp ? value : -value;
    }
    if (i != n) return UG_NUM_INVALID;
    const double *pow10 = ug_pow10();
    double f = (double)significand;  /* round half to even, as Rust's u64 as f64 */
    for (;;) {
        uint64_t magnitude = exponent < 0 ? (uint64_t)(-exponent) : (uint64_t)exponent;
        if (magnitude <= 308) {
            if (exponent >= 0) {
                f *= pow10[magnitude];
                if (std::isinf(f)) return UG_NUM_RANGE;
            } else {
                f /= pow10[magnitude];
            }
            break;
        }
        if (f == 0.0) break;
        if (exponent >= 0) return UG_NUM_RANGE;
        f /= 1e308;
        exponent += 308;
    }
    *out = negative ? -f : f;
    return UG_NUM_OK;
}

#endif
