#include "harness/watchdog.h"

#include <gtest/gtest.h>

#include <pthread.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

namespace {

using zsh_clock = std::chrono::steady_clock;

/* Shared by the listener (GoogleTest's thread) and the watching thread, which
 * outlives main: never freed, and held in zsh_watchdog_live for leak checkers. */
struct zsh_watchdog_state {
    std::mutex              lock;
    std::condition_variable wake;
    double                  limit;
    std::string             running;  /* the test in progress, or empty */
    zsh_clock::time_point   deadline;
    int                     passed = 0, failed = 0, skipped = 0;
    bool                    started = false;
};

zsh_watchdog_state *zsh_watchdog_live;

std::string zsh_watchdog_tests(int n)
{
    return std::to_string(n) + ((n == 1) ? " test" : " tests");
}

[[noreturn]] void zsh_watchdog_expire(const zsh_watchdog_state &s)
{
    std::printf("[  FAILED  ] %s (exceeded the %g s limit, ZSH_TEST_LIMIT)\n", s.running.c_str(),
                s.limit);
    std::printf("[  PASSED  ] %s.\n", zsh_watchdog_tests(s.passed).c_str());
    if (s.skipped > 0) {
        std::printf("[  SKIPPED ] %s, listed above\n", zsh_watchdog_tests(s.skipped).c_str());
    }
    std::printf("[  FAILED  ] %s, listed above\n", zsh_watchdog_tests(s.failed + 1).c_str());
    std::fflush(stdout);
    _exit(1); /* the test's threads still run: no exit handlers under their feet */
}

void *zsh_watchdog_watch(void *arg)
{
    zsh_watchdog_state *s = static_cast<zsh_watchdog_state *>(arg);
    std::unique_lock<std::mutex> lock(s->lock);

    s->started = true;
    s->wake.notify_all();
    for (;;) {
        if (s->running.empty()) {
            s->wake.wait(lock);
        } else if (zsh_clock::now() >= s->deadline) {
            zsh_watchdog_expire(*s);
        } else {
            s->wake.wait_until(lock, s->deadline);
        }
    }
}

class zsh_watchdog : public ::testing::EmptyTestEventListener {
public:
    explicit zsh_watchdog(zsh_watchdog_state *s) : m_s(s) {}

    void OnTestStart(const ::testing::TestInfo &info) override
    {
        std::lock_guard<std::mutex> lock(m_s->lock);
        m_s->running  = std::string(info.test_suite_name()) + "." + info.name();
        m_s->deadline = zsh_clock::now() + std::chrono::duration_cast<zsh_clock::duration>(
                                               std::chrono::duration<double>(m_s->limit));
        m_s->wake.notify_one();
    }

    void OnTestEnd(const ::testing::TestInfo &info) override
    {
        std::lock_guard<std::mutex> lock(m_s->lock);
        m_s->running.clear();
        if (info.result()->Skipped()) {
            m_s->skipped++;
        } else if (info.result()->Failed()) {
            m_s->failed++;
        } else {
            m_s->passed++;
        }
    }

private:
    zsh_watchdog_state *m_s;
};

} // namespace

void zsh_watchdog_install()
{
    const char *env = std::getenv("ZSH_TEST_LIMIT");
    double limit    = ZSH_TEST_LIMIT_DEFAULT;
    char *end       = nullptr;
    zsh_watchdog_state *s;
    pthread_t thread;

    if ((env != nullptr) && (*env != '\0')) {
        limit = std::strtod(env, &end);
        if ((*end != '\0') || !(limit >= 0.0)) {
            std::fprintf(stderr, "ZSH_TEST_LIMIT=%s is not a number of seconds (0: no limit)\n",
                         env);
            std::exit(2);
        }
    }
    if (limit == 0.0) {
        return;
    }
    s                 = new zsh_watchdog_state;
    s->limit          = limit;
    zsh_watchdog_live = s;
    /* A bare pthread, not std::thread, whose state only the thread would
     * hold: a forked child, which has no such thread, would leak it. */
    if (pthread_create(&thread, nullptr, zsh_watchdog_watch, s) != 0) {
        std::fprintf(stderr, "zsh_watchdog_install: cannot start the watchdog thread\n");
        std::exit(2);
    }
    pthread_detach(thread);
    /* Tests fork rank processes. A thread still starting up holds locks
     * (AddressSanitizer's allocator takes one while it sets up the thread's
     * stack) that a child forked at that moment inherits held, and its own
     * threads then deadlock on them: fork only once this one is running. */
    {
        std::unique_lock<std::mutex> lock(s->lock);
        s->wake.wait(lock, [s] { return s->started; });
    }
    ::testing::UnitTest::GetInstance()->listeners().Append(new zsh_watchdog(s));
}
