#include "vela/reactor/loop.hpp"

#include <malloc.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <mutex>
#include <system_error>
#include <thread>

#include "epoll_backend.hpp"
#include "vela/base/log.hpp"

// Under ASan or TSan malloc is the sanitizer's: glibc's malloc_trim would walk an arena
// nothing allocated from (and crash in it when glibc's malloc was never set up).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define VELA_SANITIZED_MALLOC 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define VELA_SANITIZED_MALLOC 1
#endif
#endif

namespace vela {

namespace {
thread_local Loop* t_current = nullptr;
}

struct Loop::Posted {
    std::atomic<Posted*> next{nullptr};
    UniqueFunction fn;
};

class Loop::WakeSink final : public IoSink {
  public:
    explicit WakeSink(Loop& l) : loop_(l) {}
    void on_ready() override {
        std::uint64_t v;
        [[maybe_unused]] ssize_t r = ::read(loop_.wake_fd_, &v, sizeof v);
        // Clear before draining: a post that lands after this line writes the eventfd again.
        loop_.wake_pending_.store(false, std::memory_order_seq_cst);
        loop_.run_posted();
    }

  private:
    Loop& loop_;
};

// Reads the clock between a wait and its completions.
class Loop::ClockSink final : public IoSink {
  public:
    explicit ClockSink(Loop& l) : loop_(l) {}
    void on_ready() override { loop_.refresh_clock(); }

  private:
    Loop& loop_;
};

class Loop::SignalSink final : public IoSink {
  public:
    SignalSink(int fd, std::function<void(int)> fn) : fd_(fd), fn_(std::move(fn)) {}
    void on_ready() override {
        signalfd_siginfo si;
        while (::read(fd_, &si, sizeof si) == static_cast<ssize_t>(sizeof si))
            fn_(static_cast<int>(si.ssi_signo));
    }

  private:
    int fd_;
    std::function<void(int)> fn_;
};

namespace {
// glibc gives the top of the heap back whenever a free leaves more than 128 KiB there, and
// maps blocks over its mmap threshold afresh each time: a connection that grows a buffer for
// a burst and frees it after would pay brk or mmap, and page faults, for every burst (a 4 KiB
// WebSocket echo ran at 8x the CPU per message). The loops give memory back themselves,
// once a second after load (trim_memory()), so both are raised once per process, unless the
// environment sets them (MALLOC_TRIM_THRESHOLD_, MALLOC_MMAP_THRESHOLD_).
void tune_malloc() noexcept {
    static std::once_flag once;
    std::call_once(once, [] {
        if (!std::getenv("MALLOC_TRIM_THRESHOLD_")) ::mallopt(M_TRIM_THRESHOLD, 64 << 20);
        if (!std::getenv("MALLOC_MMAP_THRESHOLD_")) ::mallopt(M_MMAP_THRESHOLD, 4 << 20);
    });
}
}  // namespace

Loop::Loop(LoopOptions options)
    : gate_(std::make_shared<detail::LoopGate>(this)),
      io_(std::make_unique<EpollBackend>()),
      wheel_(options.wheel_tick_ms),
      buffers_(options.buffer_size) {
    tune_malloc();
    auto* stub = new Posted;
    head_ = stub;
    tail_.store(stub, std::memory_order_relaxed);
    wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_fd_ < 0) throw std::system_error(errno, std::generic_category(), "eventfd");
    wake_sink_ = std::make_unique<WakeSink>(*this);
    wake_handle_.fd = wake_fd_;
    wake_handle_.sink = wake_sink_.get();
    wake_handle_.kind = IoHandle::notify;
    io_->add(wake_handle_);
    refresh_clock();
}

Loop::~Loop() {
    gate_->loop.store(nullptr);
    while (gate_->posting.load() != 0) std::this_thread::yield();  // a LoopRef::post inside
    run_posted();
    for (UniqueFunction& fn : at_exit_) fn();
    at_exit_.clear();
    while (!deferred_.empty()) run_deferred();
    while (head_) {
        Posted* n = head_->next.load(std::memory_order_acquire);
        delete head_;
        head_ = n;
    }
    io_->remove(wake_handle_);
    ::close(wake_fd_);
    if (signal_fd_ >= 0) {
        io_->remove(signal_handle_);
        ::close(signal_fd_);
    }
}

Loop* Loop::current() noexcept { return t_current; }

void Loop::refresh_clock() noexcept {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    now_ms_ = static_cast<std::uint64_t>(ts.tv_sec) * 1000 +
              static_cast<std::uint64_t>(ts.tv_nsec) / 1000000;
    if (date_.refresh()) [[unlikely]]
        trim_memory();  // once a second: memory a burst of load left behind goes back
}

void Loop::post(UniqueFunction fn) {
    auto* node = new Posted;
    node->fn = std::move(fn);
    Posted* prev = tail_.exchange(node, std::memory_order_acq_rel);
    prev->next.store(node, std::memory_order_release);
    if (!wake_pending_.exchange(true, std::memory_order_seq_cst)) {
        std::uint64_t one = 1;
        [[maybe_unused]] ssize_t r = ::write(wake_fd_, &one, sizeof one);
    }
}

bool LoopRef::alive() const { return gate_ && gate_->loop.load() != nullptr; }

bool LoopRef::post(UniqueFunction fn) const {
    if (!gate_) return false;
    gate_->posting.fetch_add(1);
    Loop* l = gate_->loop.load();
    if (l) l->post(std::move(fn));
    gate_->posting.fetch_sub(1);
    return l != nullptr;
}

void Loop::spawn(Task<void> task) {
    post([t = std::move(task)]() mutable { vela::spawn(std::move(t)); });
}

void Loop::run_posted() {
    // Pop until the queue looks empty; a producer between exchange and link is picked up
    // on its own wake-up.
    for (;;) {
        Posted* next = head_->next.load(std::memory_order_acquire);
        if (!next) return;
        delete head_;
        head_ = next;
        UniqueFunction fn = std::move(next->fn);
        fn();
    }
}

std::uint64_t Loop::call_after(std::chrono::milliseconds delay, UniqueFunction fn) {
    std::uint64_t id = next_timer_id_++;
    timers_.push_back(Timer{Clock::now() + delay, id});
    std::push_heap(timers_.begin(), timers_.end(), std::greater<>{});
    timer_fns_.emplace(id, std::move(fn));
    return id;
}

void Loop::cancel(std::uint64_t id) noexcept { timer_fns_.erase(id); }

void Loop::run_timers() {
    if (timers_.empty()) return;
    auto now = Clock::now();
    // Stop at once when a timer stopped the loop: later ones may resume coroutines that the
    // stopping timer abandoned.
    while (!timers_.empty() && timers_.front().when <= now &&
           !stop_.load(std::memory_order_relaxed)) {
        std::pop_heap(timers_.begin(), timers_.end(), std::greater<>{});
        std::uint64_t id = timers_.back().id;
        timers_.pop_back();
        auto it = timer_fns_.find(id);
        if (it == timer_fns_.end()) continue;  // cancelled
        UniqueFunction fn = std::move(it->second);
        timer_fns_.erase(it);
        fn();
    }
}

// One batch per call: work deferred while running waits for the next call (and the next
// poll does not block while any is queued), so something that re-defers itself cannot
// starve I/O.
void Loop::run_deferred() {
    if (deferred_.empty()) return;
    deferred_running_.swap(deferred_);
    for (auto& fn : deferred_running_) fn();
    deferred_running_.clear();
}

int Loop::poll_timeout() const noexcept {
    if (!deferred_.empty()) return 0;
    int t = wheel_.next_timeout_ms(now_ms_);
    if (!timers_.empty()) {
        auto d = std::chrono::ceil<std::chrono::milliseconds>(timers_.front().when - Clock::now());
        int ms = d.count() < 0 ? 0 : static_cast<int>(std::min<long long>(d.count(), 1 << 30));
        t = t < 0 ? ms : std::min(t, ms);
    }
    return t;
}

// After a burst of load: the pooled buffers beyond the floor, what the other pools added
// with add_trim() keep beyond theirs, and then the C library's free memory go back to the
// system (RSS returns near idle within about kTrimPeriodMs of the load's end).

void Loop::trim_later() noexcept {
    if (trim_wanted_) return;
    trim_wanted_ = true;
    // A loop with nothing else to do still wakes for it: the wheel entry fires then (or the
    // clock's next second trims first).
    if (!trim_entry_.fire) {
        trim_entry_.owner = this;
        trim_entry_.fire = [](TimerWheel::Entry* e) {
            static_cast<Loop*>(e->owner)->trim_memory();
        };
    }
    wheel_.schedule(trim_entry_, now_ms_, kTrimPeriodMs);
}

void Loop::trim_memory() noexcept {
    wheel_.cancel(trim_entry_);
    buffers_.trim(kKeptBuffers);
    for (auto& trim : trims_) trim();
#ifndef VELA_SANITIZED_MALLOC
    ::malloc_trim(0);  // (a loop with nothing to do sees no new second: idle costs nothing)
#endif
    trim_wanted_ = false;
}

void Loop::on_signals(std::vector<int> signals, std::function<void(int)> fn) {
    sigset_t set;
    sigemptyset(&set);
    for (int s : signals) sigaddset(&set, s);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    if (signal_fd_ >= 0) {
        io_->remove(signal_handle_);
        ::close(signal_fd_);
    }
    signal_fd_ = ::signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    if (signal_fd_ < 0) throw std::system_error(errno, std::generic_category(), "signalfd");
    signal_sink_ = std::make_unique<SignalSink>(signal_fd_, std::move(fn));
    signal_handle_.fd = signal_fd_;
    signal_handle_.sink = signal_sink_.get();
    signal_handle_.kind = IoHandle::notify;
    io_->add(signal_handle_);
}

void Loop::stop() noexcept {
    stop_.store(true, std::memory_order_release);
    // Wake the loop through the post path so a sleeping epoll_wait returns.
    if (!wake_pending_.exchange(true, std::memory_order_seq_cst)) {
        std::uint64_t one = 1;
        [[maybe_unused]] ssize_t r = ::write(wake_fd_, &one, sizeof one);
    }
}

void Loop::run() {
    Loop* prev = t_current;
    t_current = this;
    running_.store(true, std::memory_order_release);
    ClockSink clock(*this);
    while (!stop_.load(std::memory_order_acquire)) {
        io_->poll(poll_timeout(), clock);
        run_deferred();
        run_posted();
        run_timers();
        wheel_.advance(now_ms_);
        run_deferred();
    }
    run_posted();
    while (!deferred_.empty()) run_deferred();
    stop_.store(false, std::memory_order_release);
    running_.store(false, std::memory_order_release);
    t_current = prev;
}

void block_signals() noexcept {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);   // Server::run reloads TLS certificates on it
    sigaddset(&set, SIGUSR2);  // and starts a successor on it (Server::hot_restart)
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    signal(SIGPIPE, SIG_IGN);
}

namespace detail {
void SleepAwaiter::await_suspend(std::coroutine_handle<> h) {
    Loop* loop = Loop::current();
    if (!loop) throw std::logic_error("vela::sleep needs a running Loop on this thread");
    loop->call_after(delay, [h] { h.resume(); });
}
}  // namespace detail

}  // namespace vela
