// SPDX-License-Identifier: MIT
/*
 * errors.c - CUDA's error state, with the interposer's own errors in it.
 *
 * The runtime keeps one error per thread: the last one a call of that
 * thread gave, kept until cudaGetLastError() returns and clears it
 * (cudaPeekAtLastError() returns it and keeps it); a successful call
 * leaves it as it is.  Programs check it after their calls (CUDA's
 * samples, frameworks' check macros).  When the interposer answers an
 * error itself (strict mode out of memory; a free or a query of no live
 * pool buffer; the parent's memory in a child of fork()), the runtime has
 * not seen it, and its state cannot be written from outside.  So the
 * interposer keeps a pending error of its own per thread and answers
 * cudaGetLastError and cudaPeekAtLastError itself (runtime.c):
 *
 * - answering an error, it first takes the runtime's own pending error
 *   (its cudaGetLastError): that one is older, and CUDA would have
 *   overwritten it too; then it keeps its own;
 * - cudaGetLastError returns the runtime's pending error if there is one
 *   (newer than ours: ours took the older ones), else ours, and clears
 *   both; cudaPeekAtLastError returns the same and clears nothing.
 *
 * A program that reaches the runtime past the interposer (a runtime
 * linked statically, RTLD_DEEPBIND) sees the driver's answers only, which
 * its runtime records itself.  The driver keeps no such state.
 */
#include "internal.h"
#include "interpose.h"

static IP_TLS cudaError_t ip_pending;

cudaError_t ip_error_set(cudaError_t (*runtime_get_last)(void), cudaError_t e)
{
	if (runtime_get_last)
		runtime_get_last();
	ip_pending = e;
	return e;
}

cudaError_t ip_last_error(cudaError_t (*real)(void), int clear)
{
	cudaError_t own = real ? real() : cudaSuccess, ours = ip_pending;

	if (clear)
		ip_pending = cudaSuccess;
	return own != cudaSuccess ? own : ours;
}
