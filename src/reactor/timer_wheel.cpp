#include "vela/reactor/timer_wheel.hpp"

#include <stdexcept>

namespace vela {

TimerWheel::TimerWheel(std::uint64_t tick_ms, std::size_t slots)
    : tick_ms_(tick_ms ? tick_ms : 1), mask_(slots - 1), heads_(slots) {
    if (slots == 0 || (slots & (slots - 1)) != 0)
        throw std::invalid_argument("TimerWheel: slots must be a power of two");
    for (Entry& h : heads_) h.prev = h.next = &h;
}

void TimerWheel::schedule(Entry& e, std::uint64_t now_ms, std::uint64_t after_ms) noexcept {
    if (!started_) {
        current_ = now_ms / tick_ms_;
        started_ = true;
    }
    if (e.linked()) {
        cancel(e);
    }
    // Round up so an entry never fires early; and never into an already processed tick.
    std::uint64_t tick = (now_ms + after_ms + tick_ms_ - 1) / tick_ms_;
    if (tick <= current_) tick = current_ + 1;
    e.expiry = tick;
    Entry& head = heads_[tick & mask_];
    e.next = &head;
    e.prev = head.prev;
    head.prev->next = &e;
    head.prev = &e;
    ++count_;
}

void TimerWheel::cancel(Entry& e) noexcept {
    if (!e.linked()) return;
    e.prev->next = e.next;
    e.next->prev = e.prev;
    e.prev = e.next = nullptr;
    --count_;
}

void TimerWheel::advance(std::uint64_t now_ms) {
    if (!started_) {
        current_ = now_ms / tick_ms_;
        started_ = true;
        return;
    }
    const std::uint64_t target = now_ms / tick_ms_;
    // Walking more than one full turn would visit slots twice: clamp to one turn.
    std::uint64_t from = current_ + 1;
    if (target > current_ + mask_ + 1) from = target - mask_;
    for (std::uint64_t t = from; t <= target; ++t) {
        Entry& head = heads_[t & mask_];
        // Detach the due entries first: firing may schedule or cancel others.
        Entry due;
        due.prev = due.next = &due;
        for (Entry* e = head.next; e != &head;) {
            Entry* nx = e->next;
            if (e->expiry <= target) {
                e->prev->next = e->next;
                e->next->prev = e->prev;
                e->next = &due;
                e->prev = due.prev;
                due.prev->next = e;
                due.prev = e;
            }
            e = nx;
        }
        current_ = t;
        while (due.next != &due) {
            Entry* e = due.next;
            due.next = e->next;
            e->next->prev = &due;
            e->prev = e->next = nullptr;
            --count_;
            e->fire(e);
        }
    }
    if (target > current_) current_ = target;
}

int TimerWheel::next_timeout_ms(std::uint64_t now_ms) const noexcept {
    if (count_ == 0) return -1;
    std::uint64_t next = (current_ + 1) * tick_ms_;
    return next > now_ms ? static_cast<int>(next - now_ms) : 0;
}

}  // namespace vela
