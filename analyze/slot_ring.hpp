// slot_ring.hpp: a FIFO of records in a ring of slots reused record after record (a std::deque of records of
// ~500 bytes allocates and frees a block per record). Used by the ioctl collector and the report builder's
// linker for the ioctls they hold. Private to analyze. Thread-safety: one thread.
#pragma once

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

namespace nvtrace {

template <class T>
class SlotRing {
public:
    bool empty() const { return size_ == 0; }
    std::size_t size() const { return size_; }
    // i-th from the front; i < size().
    T& operator[](std::size_t i) { return slots_[(head_ + i) & (slots_.size() - 1)]; }
    T& front() { return slots_[head_]; }
    // A slot at the back, holding whatever an earlier record left there: the caller sets every member.
    T& push_back() {
        if (size_ == slots_.size()) grow();
        return (*this)[size_++];
    }
    void push_back(T&& v) { push_back() = std::move(v); }
    void pop_front() {
        head_ = (head_ + 1) & (slots_.size() - 1);
        --size_;
    }

private:
    void grow() {
        std::vector<T> bigger(std::max<std::size_t>(64, slots_.size() * 2));
        for (std::size_t i = 0; i < size_; ++i)
            bigger[i] = std::move((*this)[i]);
        slots_ = std::move(bigger);
        head_ = 0;
    }
    std::vector<T> slots_;  // a power of two
    std::size_t head_ = 0, size_ = 0;
};

}  // namespace nvtrace
