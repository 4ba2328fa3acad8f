/* api/jsonv.h -- typed field readers with JSON-pointer errors (internal to api/).
 *
 * Each reader looks up obj[key]; when absent it stores the default (or fails
 * with 422 if required); when present but of the wrong type or out of range
 * it fails with 422 at ptr/key. Integers accept JSON integers and integral
 * reals (4096.0), so equal inputs parse equally. Return 0 on success. */
#ifndef MFU_API_JSONV_H
#define MFU_API_JSONV_H

#include <jansson.h>
#include <stdint.h>

#include "api.h"

enum { JV_OPTIONAL = 0, JV_REQUIRED = 1 };

int jv_int(json_t *obj, const char *key, const char *ptr, int required, int64_t def,
           int64_t min, int64_t max, int64_t *out, api_status *st);
int jv_num(json_t *obj, const char *key, const char *ptr, int required, double def, double min,
           double max, double *out, api_status *st);
int jv_bool(json_t *obj, const char *key, const char *ptr, int required, int def, int *out,
            api_status *st);
/* String from a fixed list: *out = index into choices (NULL-terminated). */
int jv_enum(json_t *obj, const char *key, const char *ptr, int required, int def,
            const char *const *choices, int *out, api_status *st);
/* Every key of obj must be in known (NULL-terminated): each other one
 * fails 422 at ptr/key with "unknown field; <what> has <the known list>"
 * (a misspelt optional field was passed over in silence). 0 when all are
 * known. */
int jv_known(json_t *obj, const char *ptr, const char *what, const char *const *known,
             api_status *st);
/* jv_known, where the keys in also (NULL-terminated, or NULL) are
 * accepted as well without being offered in the message (an answer's
 * output fields given back with a configuration). */
int jv_known_also(json_t *obj, const char *ptr, const char *what, const char *const *known,
                  const char *const *also, api_status *st);
/* The known name (NULL-terminated list, '_' names skipped) one edit from
 * key (two from 5 bytes on), the nearest, of equally near ones the one
 * holding the key or held in it; NULL if none or no single one: the "did
 * you mean" of an unknown field. */
const char *jv_nearest(const char *key, const char *const *known);
/* Build "ptr/key" (RFC 6901 escaping of key) into buf. */
const char *jv_ptr(char *buf, size_t n, const char *ptr, const char *key);
const char *jv_ptr_i(char *buf, size_t n, const char *ptr, size_t index);

#endif
