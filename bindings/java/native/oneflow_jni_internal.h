/* oneflow_jni_internal.h — helpers shared by the JNI glue files (oneflow_jni.c, oneflow_jni_train.c):
 * status-to-exception mapping and UTF-8 string conversion. Not exported (-fvisibility=hidden). */
#ifndef ONEFLOW_JNI_INTERNAL_H_
#define ONEFLOW_JNI_INTERNAL_H_

#include <jni.h>
#include <stdint.h>

#include "oneflow_c.h"

#define HANDLE(type, h) ((type*)(intptr_t)(h))

/* Throws a new `class_name` (e.g. "java/lang/IllegalArgumentException") with `message`. */
void throw_class(JNIEnv* env, const char* class_name, const char* message);
/* A Java byte[] holding the bytes of `s` (no terminator); NULL with an exception pending on failure. */
jbyteArray utf8_bytes(JNIEnv* env, const char* s);
/* Turns a non-NULL status into a pending OneflowException and frees it. Returns 1 when it threw. */
int throw_status(JNIEnv* env, oneflow_status_t st);
/* A malloc'd copy of a NUL-terminated UTF-8 byte[] made by the Java side; NULL for a null array. */
char* c_string(JNIEnv* env, jbyteArray bytes);
/* Copies a byte[][] of UTF-8 names into a malloc'd char* array; 0 with an exception pending on failure. */
int c_strings(JNIEnv* env, jobjectArray arr, char*** out, jsize* out_n);
void free_strings(char** strings, jsize n);

#endif /* ONEFLOW_JNI_INTERNAL_H_ */
