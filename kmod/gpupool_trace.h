/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Tracepoints of gpupool.ko: events/gpupool/ in tracefs, for perf and
 * bpftrace.  Sizes in bytes; pid is the thread group of the process the
 * chunk counts against: the allocating process, also in the free, zeroed
 * and quarantine events, which may run in other contexts; cgroup is the id
 * of the cgroup (v2) the chunk is charged to (the inode number of its
 * directory, as bpftrace's cgroup builtin and cgroupid() give it; 0 for an
 * ALLOC refused before it was charged).
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM gpupool

#if !defined(_GPUPOOL_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _GPUPOOL_TRACE_H

#include <linux/tracepoint.h>

/* An ALLOC served or refused; wait_ns: time spent in it (zeroing waits,
 * growth included).
 */
TRACE_EVENT(gpupool_alloc,
	TP_PROTO(u64 size, u64 chunk_size, int node, pid_t pid, u64 cgroup,
		 u64 wait_ns, int ret),
	TP_ARGS(size, chunk_size, node, pid, cgroup, wait_ns, ret),
	TP_STRUCT__entry(
		__field(u64, size)
		__field(u64, chunk_size)
		__field(int, node)
		__field(pid_t, pid)
		__field(u64, cgroup)
		__field(u64, wait_ns)
		__field(int, ret)
	),
	TP_fast_assign(
		__entry->size = size;
		__entry->chunk_size = chunk_size;
		__entry->node = node;
		__entry->pid = pid;
		__entry->cgroup = cgroup;
		__entry->wait_ns = wait_ns;
		__entry->ret = ret;
	),
	TP_printk("size=%llu chunk_size=%llu node=%d pid=%d cgroup=%llu wait_ns=%llu ret=%d",
		  __entry->size, __entry->chunk_size, __entry->node,
		  __entry->pid, __entry->cgroup, __entry->wait_ns,
		  __entry->ret)
);

/*
 * Chunk events: one chunk of size bytes on node, counted against pid,
 * charged to cgroup.
 */
DECLARE_EVENT_CLASS(gpupool_chunk,
	TP_PROTO(u64 size, int node, pid_t pid, u64 cgroup),
	TP_ARGS(size, node, pid, cgroup),
	TP_STRUCT__entry(
		__field(u64, size)
		__field(int, node)
		__field(pid_t, pid)
		__field(u64, cgroup)
	),
	TP_fast_assign(
		__entry->size = size;
		__entry->node = node;
		__entry->pid = pid;
		__entry->cgroup = cgroup;
	),
	TP_printk("size=%llu node=%d pid=%d cgroup=%llu", __entry->size,
		  __entry->node, __entry->pid, __entry->cgroup)
);

/* The last reference to a chunk went: it is queued for zeroing. */
DEFINE_EVENT(gpupool_chunk, gpupool_free,
	TP_PROTO(u64 size, int node, pid_t pid, u64 cgroup),
	TP_ARGS(size, node, pid, cgroup)
);

/* A released chunk was zeroed and is back in the pool. */
DEFINE_EVENT(gpupool_chunk, gpupool_zeroed,
	TP_PROTO(u64 size, int node, pid_t pid, u64 cgroup),
	TP_ARGS(size, node, pid, cgroup)
);

/* A released chunk is still pinned by someone else: kept out of the pool. */
DEFINE_EVENT(gpupool_chunk, gpupool_quarantine,
	TP_PROTO(u64 size, int node, pid_t pid, u64 cgroup),
	TP_ARGS(size, node, pid, cgroup)
);

/* A node's sub-pool grew by size bytes to total; pid: who asked. */
TRACE_EVENT(gpupool_grow,
	TP_PROTO(u64 size, u64 total, int node, pid_t pid),
	TP_ARGS(size, total, node, pid),
	TP_STRUCT__entry(
		__field(u64, size)
		__field(u64, total)
		__field(int, node)
		__field(pid_t, pid)
	),
	TP_fast_assign(
		__entry->size = size;
		__entry->total = total;
		__entry->node = node;
		__entry->pid = pid;
	),
	TP_printk("size=%llu total=%llu node=%d pid=%d", __entry->size,
		  __entry->total, __entry->node, __entry->pid)
);

#endif /* _GPUPOOL_TRACE_H */

/* Out of the kernel tree: found through the module's include path. */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE gpupool_trace
#include <trace/define_trace.h>
