// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * tf_bfc.cc - a baseline that follows TensorFlow's BFC allocator data
 * structures literally, for the benchmark to compare the core against.
 *
 * Modelled on tensorflow/tsl/framework/bfc_allocator.{h,cc} (TensorFlow,
 * Apache-2.0), rewritten for this benchmark.  Each part names the TF function
 * it mirrors.  Kept as in TF:
 *   - chunks_ : std::vector<Chunk>, ChunkHandle = size_t index, a free list of
 *     unused handles threaded through Chunk::next (AllocateChunk /
 *     DeallocateChunk);
 *   - 21 bins, bin i for sizes [G << i, G << (i+1)), the last open-ended, each
 *     a std::set<ChunkHandle, ChunkComparator> ordered by (size, ptr);
 *   - FindChunkPtr walks the bins from BinNumForSize(rounded) upward and
 *     each bin's set linearly from begin() until a chunk that fits;
 *   - SplitChunk when chunk >= 2 * rounded or the leftover >= 128 MiB;
 *   - free by address through the RegionManager: regions sorted by end
 *     address, std::upper_bound to find the region, and a per-region
 *     handles_ vector with one ChunkHandle per G bytes;
 *   - TryToCoalesce / Merge / DeleteChunk, InsertFreeChunkIntoBin,
 *     RemoveFreeChunkFromBin, RemoveFreeChunkIterFromBin, MarkFree;
 *   - the statistics FindChunkPtr and MarkFree update.
 * Left out, and why:
 *   - the mutex (the core is called under the caller's lock, so neither side
 *     pays for one here);
 *   - the profiler TraceMe calls, VLOG, MEM_DEBUG, memory-map dumps;
 *   - timestamped chunks / MergeTimestampedChunks (timing_counter_ is null by
 *     default, so TF never takes that path; the freed_at_count checks it
 *     implies are kept);
 *   - Extend and the SubAllocator: the benchmark adds regions itself, the same
 *     way for both allocators (TF's growth rule lives in the driver).
 * Granularity: TF's kMinAllocationSize is 256; here it is a parameter
 * (kMinAllocationBits becomes min_alloc_bits_) so the baseline can run at the
 * core's granularity.  Addresses are abstract (uint64_t): nothing is mapped.
 */
#include "tf_bfc.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <new>
#include <set>
#include <stdexcept>
#include <vector>

namespace {

class BFCAllocator {
public:
	// bfc_allocator.h: typedef size_t ChunkHandle; kInvalidChunkHandle.
	typedef size_t ChunkHandle;
	static constexpr ChunkHandle kInvalidChunkHandle = SIZE_MAX;
	typedef int BinNum;
	static constexpr int kInvalidBinNum = -1;
	static constexpr int kNumBins = 21;

	explicit BFCAllocator(size_t min_alloc_bits);
	~BFCAllocator();

	void AddRegion(uint64_t ptr, size_t bytes);
	// AllocateRaw -> AllocateRawInternal, without the Extend fallback.
	uint64_t AllocateRaw(size_t num_bytes, ChunkHandle *out_h);
	// DeallocateRaw -> DeallocateRawInternal.
	bool DeallocateRaw(uint64_t ptr);
	uint64_t Check();

private:
	// bfc_allocator.h: struct Chunk.
	struct Chunk {
		size_t size = 0;		// Buffer size.
		size_t requested_size = 0;	// What the client asked for.
		// -1 when free; otherwise a unique id of the allocation.
		int64_t allocation_id = -1;
		uint64_t ptr = 0;		// Start of the chunk.
		ChunkHandle prev = kInvalidChunkHandle;	// lower address
		ChunkHandle next = kInvalidChunkHandle;	// higher address
		BinNum bin_num = kInvalidBinNum;
		uint64_t freed_at_count = 0;
		bool in_use() const { return allocation_id != -1; }
	};

	// bfc_allocator.h: struct Bin with ChunkComparator and FreeChunkSet.
	struct Bin {
		size_t bin_size = 0;
		class ChunkComparator {
		public:
			explicit ChunkComparator(BFCAllocator *allocator)
				: allocator_(allocator) {}
			// Sort by size, then by address.
			bool operator()(const ChunkHandle ha,
					const ChunkHandle hb) const
			{
				const Chunk *a = allocator_->ChunkFromHandle(ha);
				const Chunk *b = allocator_->ChunkFromHandle(hb);
				if (a->size != b->size)
					return a->size < b->size;
				return a->ptr < b->ptr;
			}

		private:
			BFCAllocator *allocator_;
		};
		typedef std::set<ChunkHandle, ChunkComparator> FreeChunkSet;
		FreeChunkSet free_chunks;
		Bin(BFCAllocator *allocator, size_t bs)
			: bin_size(bs), free_chunks(ChunkComparator(allocator)) {}
	};

	// bfc_allocator.h: class AllocationRegion (one handle per
	// kMinAllocationSize bytes, addr -> handle).
	class AllocationRegion {
	public:
		AllocationRegion(uint64_t ptr, size_t memory_size, size_t bits)
			: ptr_(ptr), memory_size_(memory_size),
			  end_ptr_(ptr + memory_size), bits_(bits)
		{
			const size_t n_handles =
				(memory_size + (size_t{1} << bits) - 1) >> bits;
			handles_.resize(n_handles, kInvalidChunkHandle);
		}
		uint64_t ptr() const { return ptr_; }
		uint64_t end_ptr() const { return end_ptr_; }
		size_t memory_size() const { return memory_size_; }
		ChunkHandle get_handle(uint64_t p) const
		{
			return handles_[IndexFor(p)];
		}
		void set_handle(uint64_t p, ChunkHandle h)
		{
			handles_[IndexFor(p)] = h;
		}
		void erase(uint64_t p) { set_handle(p, kInvalidChunkHandle); }

	private:
		size_t IndexFor(uint64_t p) const
		{
			return static_cast<size_t>((p - ptr_) >> bits_);
		}
		uint64_t ptr_ = 0;
		size_t memory_size_ = 0;
		uint64_t end_ptr_ = 0;
		size_t bits_ = 8;
		std::vector<ChunkHandle> handles_;
	};

	// bfc_allocator.h: class RegionManager (regions sorted by end_ptr,
	// found with std::upper_bound).
	class RegionManager {
	public:
		void AddAllocationRegion(uint64_t ptr, size_t memory_size,
					 size_t bits)
		{
			auto entry = std::upper_bound(regions_.begin(),
						      regions_.end(), ptr,
						      &Comparator);
			regions_.insert(entry,
					AllocationRegion(ptr, memory_size, bits));
		}
		ChunkHandle get_handle(uint64_t p) const
		{
			return RegionFor(p)->get_handle(p);
		}
		void set_handle(uint64_t p, ChunkHandle h)
		{
			MutableRegionFor(p)->set_handle(p, h);
		}
		void erase(uint64_t p) { MutableRegionFor(p)->erase(p); }
		const std::vector<AllocationRegion> &regions() const
		{
			return regions_;
		}
		// TF LOG(FATAL)s when no region holds p; here nullptr.
		const AllocationRegion *RegionFor(uint64_t p) const
		{
			auto entry = std::upper_bound(regions_.begin(),
						      regions_.end(), p,
						      &Comparator);
			if (entry != regions_.end() && p >= entry->ptr())
				return &(*entry);
			return nullptr;
		}

	private:
		static bool Comparator(uint64_t ptr,
				       const AllocationRegion &other)
		{
			return ptr < other.end_ptr();
		}
		AllocationRegion *MutableRegionFor(uint64_t p)
		{
			return const_cast<AllocationRegion *>(RegionFor(p));
		}
		std::vector<AllocationRegion> regions_;
	};

	size_t RoundedBytes(size_t bytes) const
	{
		return kMinAllocationSize *
		       ((bytes + kMinAllocationSize - 1) / kMinAllocationSize);
	}
	Chunk *ChunkFromHandle(ChunkHandle h) { return &chunks_[h]; }
	const Chunk *ChunkFromHandle(ChunkHandle h) const
	{
		return &chunks_[h];
	}
	Bin *BinFromIndex(BinNum index) { return &bins_[index]; }
	size_t BinNumToSize(BinNum index) const
	{
		return kMinAllocationSize << index;
	}
	static int Log2FloorNonZero(uint64_t n)
	{
		return 63 ^ __builtin_clzll(n);
	}
	BinNum BinNumForSize(size_t bytes) const
	{
		uint64_t v = std::max<size_t>(bytes, kMinAllocationSize) >>
			     kMinAllocationBits;
		int b = std::min(kNumBins - 1, Log2FloorNonZero(v));
		return b;
	}

	uint64_t FindChunkPtr(BinNum bin_num, size_t rounded_bytes,
			      size_t num_bytes, uint64_t freed_before,
			      ChunkHandle *out_h);
	void SplitChunk(ChunkHandle h, size_t num_bytes);
	void Merge(ChunkHandle h1, ChunkHandle h2);
	void InsertFreeChunkIntoBin(ChunkHandle h);
	void RemoveFreeChunkIterFromBin(Bin::FreeChunkSet *free_chunks,
					const Bin::FreeChunkSet::iterator &c);
	void RemoveFreeChunkFromBin(ChunkHandle h);
	void DeleteChunk(ChunkHandle h);
	ChunkHandle AllocateChunk();
	void DeallocateChunk(ChunkHandle h);
	void MarkFree(ChunkHandle h);
	ChunkHandle TryToCoalesce(ChunkHandle h, bool ignore_freed_at);

	const size_t kMinAllocationBits;
	const size_t kMinAllocationSize;
	// fragmentation_fraction is 0 by default -> 128 MiB.
	const int64_t max_internal_fragmentation_bytes_ = int64_t{128} << 20;

	std::vector<Bin> bins_;
	RegionManager region_manager_;
	std::vector<Chunk> chunks_;
	ChunkHandle free_chunks_list_ = kInvalidChunkHandle;
	int64_t next_allocation_id_ = 1;

	// The parts of AllocatorStats that FindChunkPtr / MarkFree maintain.
	struct {
		int64_t num_allocs = 0;
		int64_t bytes_in_use = 0;
		int64_t peak_bytes_in_use = 0;
		int64_t largest_alloc_size = 0;
	} stats_;
};

BFCAllocator::BFCAllocator(size_t min_alloc_bits)
	: kMinAllocationBits(min_alloc_bits),
	  kMinAllocationSize(size_t{1} << min_alloc_bits)
{
	// BFCAllocator::BFCAllocator: create the bins.
	bins_.reserve(kNumBins);
	for (BinNum b = 0; b < kNumBins; b++)
		bins_.emplace_back(this, BinNumToSize(b));
}

BFCAllocator::~BFCAllocator() = default;

// Extend(), after SubAllocator::Alloc returned the region: register it and
// make one free chunk covering it.
void BFCAllocator::AddRegion(uint64_t ptr, size_t bytes)
{
	region_manager_.AddAllocationRegion(ptr, bytes, kMinAllocationBits);
	ChunkHandle h = AllocateChunk();
	Chunk *c = ChunkFromHandle(h);
	c->ptr = ptr;
	c->size = bytes;
	c->allocation_id = -1;
	c->prev = kInvalidChunkHandle;
	c->next = kInvalidChunkHandle;
	c->freed_at_count = 0;
	region_manager_.set_handle(c->ptr, h);
	InsertFreeChunkIntoBin(TryToCoalesce(h, /*ignore_freed_at=*/false));
}

// AllocateChunk(): reuse a handle from the free list or grow chunks_.
BFCAllocator::ChunkHandle BFCAllocator::AllocateChunk()
{
	if (free_chunks_list_ != kInvalidChunkHandle) {
		ChunkHandle h = free_chunks_list_;
		Chunk *c = ChunkFromHandle(h);
		free_chunks_list_ = c->next;
		return h;
	}
	ChunkHandle h = chunks_.size();
	chunks_.resize(h + 1);
	return h;
}

// DeallocateChunk()
void BFCAllocator::DeallocateChunk(ChunkHandle h)
{
	Chunk *c = ChunkFromHandle(h);
	c->allocation_id = -1;
	c->bin_num = kInvalidBinNum;
	c->next = free_chunks_list_;
	free_chunks_list_ = h;
}

// AllocateRawInternal(), minus the lock, Extend, timestamped chunks and
// DeallocateFreeRegions (the driver adds regions).
uint64_t BFCAllocator::AllocateRaw(size_t num_bytes, ChunkHandle *out_h)
{
	if (num_bytes == 0)
		return 0;
	size_t rounded_bytes = RoundedBytes(num_bytes);
	BinNum bin_num = BinNumForSize(rounded_bytes);
	return FindChunkPtr(bin_num, rounded_bytes, num_bytes, 0, out_h);
}

// FindChunkPtr(): bins upward from bin_num, each bin's set walked linearly
// from the smallest chunk until one fits.
uint64_t BFCAllocator::FindChunkPtr(BinNum bin_num, size_t rounded_bytes,
				    size_t num_bytes, uint64_t freed_before,
				    ChunkHandle *out_h)
{
	for (; bin_num < kNumBins; bin_num++) {
		Bin *b = BinFromIndex(bin_num);
		for (auto citer = b->free_chunks.begin();
		     citer != b->free_chunks.end(); ++citer) {
			const ChunkHandle h = (*citer);
			Chunk *chunk = ChunkFromHandle(h);
			if (freed_before > 0 &&
			    freed_before < chunk->freed_at_count)
				continue;
			if (chunk->size >= rounded_bytes) {
				RemoveFreeChunkIterFromBin(&b->free_chunks,
							   citer);
				if (chunk->size >= rounded_bytes * 2 ||
				    static_cast<int64_t>(chunk->size) -
						    static_cast<int64_t>(rounded_bytes) >=
					    max_internal_fragmentation_bytes_) {
					SplitChunk(h, rounded_bytes);
					chunk = ChunkFromHandle(h);
				}
				chunk->requested_size = num_bytes;
				chunk->allocation_id = next_allocation_id_++;
				++stats_.num_allocs;
				stats_.bytes_in_use += chunk->size;
				stats_.peak_bytes_in_use =
					std::max(stats_.peak_bytes_in_use,
						 stats_.bytes_in_use);
				stats_.largest_alloc_size = std::max<int64_t>(
					stats_.largest_alloc_size, chunk->size);
				*out_h = h;
				return chunk->ptr;
			}
		}
	}
	return 0;
}

// SplitChunk(): the front num_bytes stay in h, the rest becomes a new free
// chunk registered in the region and put into its bin.
void BFCAllocator::SplitChunk(ChunkHandle h, size_t num_bytes)
{
	ChunkHandle h_new_chunk = AllocateChunk();
	Chunk *c = ChunkFromHandle(h);
	Chunk *new_chunk = ChunkFromHandle(h_new_chunk);
	new_chunk->ptr = c->ptr + num_bytes;
	region_manager_.set_handle(new_chunk->ptr, h_new_chunk);
	new_chunk->size = c->size - num_bytes;
	c->size = num_bytes;
	new_chunk->allocation_id = -1;
	new_chunk->freed_at_count = c->freed_at_count;
	ChunkHandle h_neighbor = c->next;
	new_chunk->prev = h;
	new_chunk->next = h_neighbor;
	c->next = h_new_chunk;
	if (h_neighbor != kInvalidChunkHandle) {
		Chunk *c_neighbor = ChunkFromHandle(h_neighbor);
		c_neighbor->prev = h_new_chunk;
	}
	InsertFreeChunkIntoBin(h_new_chunk);
}

// DeallocateRawInternal(): region lookup, MarkFree, coalesce, bin.
bool BFCAllocator::DeallocateRaw(uint64_t ptr)
{
	if (ptr == 0)
		return false;
	const AllocationRegion *r = region_manager_.RegionFor(ptr);
	if (!r)				// TF: LOG(FATAL)
		return false;
	ChunkHandle h = r->get_handle(ptr);
	if (h == kInvalidChunkHandle || !ChunkFromHandle(h)->in_use())
		return false;		// TF: CHECK failures
	MarkFree(h);
	InsertFreeChunkIntoBin(TryToCoalesce(h, false));
	return true;
}

// Merge(): h2 (the next chunk of h1) is folded into h1 and deleted.
void BFCAllocator::Merge(ChunkHandle h1, ChunkHandle h2)
{
	Chunk *c1 = ChunkFromHandle(h1);
	Chunk *c2 = ChunkFromHandle(h2);
	ChunkHandle h3 = c2->next;
	c1->next = h3;
	if (h3 != kInvalidChunkHandle) {
		Chunk *c3 = ChunkFromHandle(h3);
		c3->prev = h1;
	}
	c1->size += c2->size;
	c1->freed_at_count = std::max(c1->freed_at_count, c2->freed_at_count);
	DeleteChunk(h2);
}

// DeleteChunk()
void BFCAllocator::DeleteChunk(ChunkHandle h)
{
	Chunk *c = ChunkFromHandle(h);
	region_manager_.erase(c->ptr);
	DeallocateChunk(h);
}

// InsertFreeChunkIntoBin()
void BFCAllocator::InsertFreeChunkIntoBin(ChunkHandle h)
{
	Chunk *c = ChunkFromHandle(h);
	BinNum bin_num = BinNumForSize(c->size);
	Bin *new_bin = BinFromIndex(bin_num);
	c->bin_num = bin_num;
	new_bin->free_chunks.insert(h);
}

// RemoveFreeChunkIterFromBin()
void BFCAllocator::RemoveFreeChunkIterFromBin(
	Bin::FreeChunkSet *free_chunks,
	const Bin::FreeChunkSet::iterator &citer)
{
	ChunkHandle h = *citer;
	Chunk *c = ChunkFromHandle(h);
	free_chunks->erase(citer);
	c->bin_num = kInvalidBinNum;
}

// RemoveFreeChunkFromBin(): erase by key (a set lookup).
void BFCAllocator::RemoveFreeChunkFromBin(ChunkHandle h)
{
	Chunk *c = ChunkFromHandle(h);
	BinFromIndex(c->bin_num)->free_chunks.erase(h);
	c->bin_num = kInvalidBinNum;
}

// MarkFree()
void BFCAllocator::MarkFree(ChunkHandle h)
{
	Chunk *c = ChunkFromHandle(h);
	c->allocation_id = -1;
	stats_.bytes_in_use -= c->size;
}

// TryToCoalesce(): merge with a free next, then into a free prev.
BFCAllocator::ChunkHandle BFCAllocator::TryToCoalesce(ChunkHandle h,
						      bool ignore_freed_at)
{
	Chunk *c = ChunkFromHandle(h);
	if ((!ignore_freed_at) && c->freed_at_count > 0)
		return h;
	ChunkHandle coalesced_chunk = h;

	if (c->next != kInvalidChunkHandle &&
	    !ChunkFromHandle(c->next)->in_use()) {
		Chunk *n = ChunkFromHandle(c->next);
		if ((n->freed_at_count == 0) || ignore_freed_at) {
			RemoveFreeChunkFromBin(c->next);
			Merge(h, c->next);
		}
	}
	if (c->prev != kInvalidChunkHandle &&
	    !ChunkFromHandle(c->prev)->in_use()) {
		Chunk *n = ChunkFromHandle(c->prev);
		if ((n->freed_at_count == 0) || ignore_freed_at) {
			coalesced_chunk = c->prev;
			RemoveFreeChunkFromBin(c->prev);
			Merge(c->prev, h);
		}
	}
	return coalesced_chunk;
}

// Not in TF: the benchmark's own consistency walk (never timed).
uint64_t BFCAllocator::Check()
{
	uint64_t bad = 0, free_seen = 0, in_bins = 0;
	int64_t in_use = 0;

	for (const AllocationRegion &r : region_manager_.regions()) {
		ChunkHandle h = r.get_handle(r.ptr());
		ChunkHandle prev = kInvalidChunkHandle;
		uint64_t at = r.ptr();
		bool prev_free = false;

		if (h == kInvalidChunkHandle) {
			bad++;
			continue;
		}
		while (h != kInvalidChunkHandle) {
			const Chunk *c = ChunkFromHandle(h);
			if (c->ptr != at || c->prev != prev || c->size == 0 ||
			    c->size % kMinAllocationSize)
				bad++;
			if (r.get_handle(c->ptr) != h)
				bad++;
			if (!c->in_use()) {
				free_seen++;
				if (prev_free)
					bad++;	// uncoalesced neighbours
				if (c->bin_num != BinNumForSize(c->size))
					bad++;
			} else {
				in_use += c->size;
				if (c->bin_num != kInvalidBinNum)
					bad++;
			}
			prev_free = !c->in_use();
			at += c->size;
			prev = h;
			h = c->next;
		}
		if (at != r.end_ptr())
			bad++;
	}
	for (BinNum b = 0; b < kNumBins; b++) {
		for (ChunkHandle h : BinFromIndex(b)->free_chunks) {
			in_bins++;
			if (ChunkFromHandle(h)->in_use() ||
			    ChunkFromHandle(h)->bin_num != b)
				bad++;
		}
	}
	if (in_bins != free_seen)
		bad++;
	if (in_use != stats_.bytes_in_use)
		bad++;
	return bad;
}

}  // namespace

struct tf_bfc {
	BFCAllocator a;
	uint64_t gran;
	explicit tf_bfc(size_t bits) : a(bits), gran(uint64_t{1} << bits) {}
};

extern "C" struct tf_bfc *tf_bfc_create(uint64_t granularity)
{
	if (granularity == 0 || (granularity & (granularity - 1)))
		return nullptr;
	return new (std::nothrow) tf_bfc(static_cast<size_t>(
		__builtin_ctzll(granularity)));
}

extern "C" void tf_bfc_destroy(struct tf_bfc *t)
{
	delete t;
}

extern "C" int tf_bfc_add_region(struct tf_bfc *t, uint64_t base,
				 uint64_t size)
{
	if (!size || base + size < base || !base ||
	    (base | size) & (t->gran - 1))
		return -22;
	try {
		t->a.AddRegion(base, size);
	} catch (const std::bad_alloc &) {	/* its handle vector */
		return -12;
	} catch (const std::length_error &) {
		return -12;
	}
	return 0;
}

extern "C" int tf_bfc_alloc(struct tf_bfc *t, uint64_t size,
			    uint64_t *handle, uint64_t *addr)
{
	size_t h = 0;
	uint64_t p;

	if (size == 0)
		return -22;
	p = t->a.AllocateRaw(size, &h);
	if (!p)
		return -12;
	*handle = h;
	*addr = p;
	return 0;
}

extern "C" int tf_bfc_free(struct tf_bfc *t, uint64_t addr)
{
	return t->a.DeallocateRaw(addr) ? 0 : -22;
}

extern "C" uint64_t tf_bfc_check(struct tf_bfc *t)
{
	return t->a.Check();
}
