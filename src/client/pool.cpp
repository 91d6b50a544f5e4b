#include "client/pool.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "client/h2_exchange.hpp"
#include "vela/base/ascii.hpp"
#include "vela/base/base64.hpp"

namespace vela::http::detail {

OriginPool::~OriginPool() {
    for (Connection* c : idle) delete c;
    for (Connection* c : shared) delete c;
}

void LoopPools::close_all() noexcept {
    // The pools themselves stay: a connection still busy with a request points at its pool.
    for (auto& [key, pool] : pools) {
        const auto n = static_cast<std::int64_t>(pool->idle.size());
        impl.idle.fetch_sub(n, std::memory_order_relaxed);
        impl.open.fetch_sub(n, std::memory_order_relaxed);
        pool->open -= pool->idle.size();
        for (Connection* c : pool->idle) {
            c->close();  // close_notify: the TLS session stays resumable
            delete c;
        }
        pool->idle.clear();
        // Shared HTTP/2 connections: none has a request left when the loop or client goes.
        for (Connection* c : pool->shared) {
            c->h2->retire();  // close_notify: the TLS session stays resumable
            c->h2->fail_all(H2Stream::Failure::protocol, "the client's pools were closed");
            c->pool = nullptr;
            c->close();
            delete c;
        }
        impl.open.fetch_sub(static_cast<std::int64_t>(pool->shared.size()),
                            std::memory_order_relaxed);
        pool->open -= pool->shared.size();
        pool->shared.clear();
    }
}

Connection* OriginPool::take_shared() {
    for (Connection* c : shared) {
        if (c->h2->can_open()) {
            ++c->h2->reserved;
            return c;
        }
    }
    return nullptr;
}

bool OriginPool::h2_warming() const noexcept {
    for (const Connection* c : shared)
        if (c->h2->warming()) return true;
    return false;
}

void OriginPool::share(Connection* c) {
    shared.push_back(c);
    ++c->h2->reserved;
}

Connection* OriginPool::take_idle() {
    while (!idle.empty()) {
        Connection* c = idle.back();
        idle.pop_back();
        owner.impl.idle.fetch_sub(1, std::memory_order_relaxed);
        if (c->usable()) {
            c->unpark();
            return c;
        }
        c->idle = false;
        discard(c);
    }
    return nullptr;
}

void OriginPool::release(Connection* c, bool reusable) {
    if (!reusable || !c->usable() || idle.size() >= owner.impl.options.max_idle_per_origin) {
        discard(c);
        return;
    }
    c->lent = false;
    c->park(owner.loop.now_ms() +
            static_cast<std::uint64_t>(owner.impl.options.idle_timeout.count()));
    if (c->idle) {  // park() reads on; a FIN already there discards it at once
        idle.push_back(c);
        owner.impl.idle.fetch_add(1, std::memory_order_relaxed);
    }
    wake_one();
}

void OriginPool::discard(Connection* c) {
    if (c->pool != nullptr) c->close();  // while still marked idle (see Connection::close)
    if (c->idle) {
        for (std::size_t i = 0; i < idle.size(); ++i) {
            if (idle[i] == c) {
                idle.erase(idle.begin() + static_cast<std::ptrdiff_t>(i));
                owner.impl.idle.fetch_sub(1, std::memory_order_relaxed);
                break;
            }
        }
        c->idle = false;
    }
    if (c->pool == nullptr) return;  // already discarded
    c->pool = nullptr;
    if (c->h2) {
        std::erase(shared, c);
        c->h2->fail_all(H2Stream::Failure::protocol, "the HTTP/2 connection was closed");
        c->h2->run_wakes();
    }
    c->close();
    --open;
    owner.impl.open.fetch_sub(1, std::memory_order_relaxed);
    owner.loop.defer([c] { delete c; });
    wake_one();
}

void OriginPool::enqueue(SlotWaiter& w) {
    w.prev = last;
    w.next = nullptr;
    if (last)
        last->next = &w;
    else
        first = &w;
    last = &w;
}

void OriginPool::dequeue(SlotWaiter& w) noexcept {
    if (w.prev)
        w.prev->next = w.next;
    else if (first == &w)
        first = w.next;
    else
        return;  // not queued
    if (w.next)
        w.next->prev = w.prev;
    else
        last = w.prev;
    w.prev = w.next = nullptr;
}

void OriginPool::wake_one() {
    SlotWaiter* w = first;
    if (!w) return;
    dequeue(*w);
    // Resumed from the loop: the caller may be deep in a connection's callback.
    const std::coroutine_handle<> h = w->h;
    owner.loop.defer([h] { h.resume(); });
}

void OriginPool::wake_all() {
    while (first) wake_one();
}

namespace {
Url bare(const Url& u) {
    Url o = u;
    o.target.assign(1, '/');
    o.user.clear();
    o.password.clear();
    o.has_userinfo = false;
    return o;
}
}  // namespace

OriginPool& LoopPools::pool_for(const Url& url, bool http1_only) {
    if (last.pool && last.scheme == url.scheme && last.port == url.port &&
        last.http1_only == http1_only && last.host == url.host)
        return *last.pool;
    OriginPool& found = find_pool(url, http1_only);
    last = LastPool{url.scheme, url.port, http1_only, url.host, &found};
    return found;
}

OriginPool& LoopPools::find_pool(const Url& url, bool http1_only) {
    const Url* proxy = impl.proxy_for(url);
    // Through an http proxy every http origin shares the proxy's connections; an https
    // origin gets tunnels of its own.
    std::string key = !proxy         ? url.origin()
                      : url.secure() ? url.origin() + " via " + proxy->origin()
                                     : "proxy " + proxy->origin();
    const ClientOptions& o = impl.options;
    if (http1_only && ((o.http2 && url.secure()) || (o.h2c && !url.secure() && !proxy)))
        key += " http/1.1";
    auto it = pools.find(key);
    if (it != pools.end()) return *it->second;
    auto p = std::make_unique<OriginPool>(*this, bare(proxy && !url.secure() ? *proxy : url));
    p->dial_to = bare(proxy ? *proxy : url);
    p->h2_tls = o.http2 && url.secure() && !http1_only;
    p->h2c = o.h2c && !url.secure() && !proxy && !http1_only;
    if (proxy) {
        p->tunnel = url.secure();
        p->absolute = !url.secure();
        if (proxy->has_userinfo)
            p->proxy_auth = "Basic " + base64_encode(proxy->user + ":" + proxy->password);
    }
    OriginPool& ref = *p;
    pools.emplace(std::move(key), std::move(p));
    return ref;
}

}  // namespace vela::http::detail

namespace vela::http {

namespace {
std::string env(const char* name) {
    const char* v = std::getenv(name);
    return v ? v : "";
}

// An http:// proxy URL (a bare host:port gets http:// in front, as curl reads it).
std::optional<Url> proxy_url(std::string text, std::string_view what) {
    if (text.empty()) return std::nullopt;
    if (text.find("://") == std::string::npos) text = "http://" + text;
    Url u;
    try {
        u = Url::parse(text);
    } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(std::string(what) + ": " + e.what());
    }
    if (u.scheme != Scheme::http)
        throw std::invalid_argument(std::string(what) +
                                    ": only http:// proxies are supported, not " + text);
    return u;
}

bool loopback(const std::string& host) {
    return host == "localhost" || host == "::1" || host.starts_with("127.") ||
           host.ends_with(".localhost");
}
}  // namespace

Client::Impl::Impl(ClientOptions o)
    : options(std::move(o)),
      resolver(options.dns_ttl, options.dns_servers, options.connect_timeout) {
    std::string no = options.no_proxy;
    if (!options.proxy.empty()) {
        http_proxy = https_proxy = proxy_url(options.proxy, "ClientOptions::proxy");
    } else if (options.proxy_from_env) {
        proxy_from_env = true;
        http_proxy = proxy_url(env("http_proxy"), "http_proxy");
        std::string hs = env("HTTPS_PROXY");
        https_proxy = proxy_url(hs.empty() ? env("https_proxy") : hs, "HTTPS_PROXY");
        if (no.empty()) no = env("NO_PROXY").empty() ? env("no_proxy") : env("NO_PROXY");
    }
    ascii::for_each_list_item(no, [&](std::string_view item) {
        std::string h(item);
        for (char& ch : h) ch = ascii::lower(ch);
        if (h == "*") no_proxy_all = true;
        if (!h.empty() && h[0] == '[')
            h = h.substr(1, h.find(']') - 1);  // [::1]
        else if (std::count(h.begin(), h.end(), ':') == 1)
            h = h.substr(0, h.find(':'));
        while (!h.empty() && h[0] == '.') h.erase(0, 1);
        if (!h.empty()) no_proxy.push_back(std::move(h));
    });
}

const Url* Client::Impl::proxy_for(const Url& url) const {
    if (url.scheme == Scheme::http_unix) return nullptr;
    const std::optional<Url>& p = url.secure() ? https_proxy : http_proxy;
    if (!p || no_proxy_all) return nullptr;
    if (proxy_from_env && loopback(url.host)) return nullptr;
    for (const std::string& n : no_proxy) {
        if (url.host == n) return nullptr;
        if (url.host.size() > n.size() && url.host.ends_with(n) &&
            url.host[url.host.size() - n.size() - 1] == '.')
            return nullptr;
    }
    return &*p;
}

Client::Impl::~Impl() {
    for (auto& lp : loops) {
        std::lock_guard lk(lp->mu);
        if (!lp->closed) lp->close_all();
        lp->closed = true;
    }
}

namespace {
// Every client gets an id never used again, so a cache entry of a destroyed client (whose
// address a new one may reuse) never matches.
std::atomic<std::uint64_t> next_client_id{1};
// Bumped when a loop that sent requests is destroyed: the caches below are then refilled (a
// new loop may reuse the old one's address).
std::atomic<std::uint64_t> loops_gone{0};

// The last (client, loop) -> pools lookup of this thread.
struct HereCache {
    std::uint64_t client = 0;
    const Loop* loop = nullptr;
    std::uint64_t gone = 0;
    detail::LoopPools* pools = nullptr;
};
thread_local HereCache here_cache;
}  // namespace

std::uint64_t Client::Impl::new_id() noexcept {
    return next_client_id.fetch_add(1, std::memory_order_relaxed);
}

detail::LoopPools& Client::Impl::here() {
    Loop* l = Loop::current();
    if (!l) throw std::logic_error("vela::http::Client: requests must be made on a vela loop");
    HereCache& hc = here_cache;
    const std::uint64_t gone = loops_gone.load(std::memory_order_acquire);
    if (hc.client == id && hc.loop == l && hc.gone == gone) return *hc.pools;
    std::lock_guard lk(mu);
    detail::LoopPools* found = nullptr;
    for (auto& lp : loops) {
        if (&lp->loop != l) continue;
        std::lock_guard g(lp->mu);
        if (!lp->loop_gone) found = lp.get();
    }
    if (!found) {
        // A loop destroyed since closed its pools (its at-exit hook); forget them.
        std::erase_if(loops, [](const std::shared_ptr<detail::LoopPools>& lp) {
            std::lock_guard g(lp->mu);
            return lp->loop_gone;
        });
        auto lp = std::make_shared<detail::LoopPools>(*this, *l);
        l->at_exit([lp] {
            std::lock_guard g(lp->mu);
            if (!lp->closed) lp->close_all();
            lp->closed = true;
            lp->loop_gone = true;
            loops_gone.fetch_add(1, std::memory_order_release);
        });
        loops.push_back(lp);
        found = lp.get();
    }
    hc = HereCache{id, l, gone, found};
    return *found;
}

tls::ClientContext& Client::Impl::tls() {
    std::lock_guard lk(mu);
    if (!tls_ctx) tls_ctx = tls::ClientContext::create(options.tls);
    return *tls_ctx;
}

}  // namespace vela::http
