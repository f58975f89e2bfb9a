/*
 * The sticky error (core/sticky.h): the first failure is kept with the
 * message the thread had then, later ones and successes change nothing, and
 * a message longer than the room is cut, not overrun.
 */
#include "harness/zsh_test.h"

#include "core/status.h"
#include "core/sticky.h"

#include <string.h>

ZSH_TEST(sticky, the_first_failure_is_kept_with_its_message_and_later_ones_are_not)
{
    zsh_sticky_t s = {0};

    ZSH_EXPECT_TRUE(!zsh_sticky_failed(&s));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_sticky_set(&s, ZSH_OK));
    ZSH_EXPECT_TRUE(!zsh_sticky_failed(&s));
    zsh_error(ZSH_ERR_IO, "the disk went away");
    ZSH_EXPECT_STATUS(ZSH_ERR_IO, zsh_sticky_set(&s, ZSH_ERR_IO));
    ZSH_EXPECT_TRUE(zsh_sticky_failed(&s));
    zsh_error(ZSH_ERR_TIMEOUT, "a later timeout");
    ZSH_EXPECT_STATUS(ZSH_ERR_TIMEOUT, zsh_sticky_set(&s, ZSH_ERR_TIMEOUT)); /* passed on */
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_sticky_set(&s, ZSH_OK));
    ZSH_EXPECT_STATUS(ZSH_ERR_IO, s.status);
    ZSH_EXPECT_STR_CONTAINS(s.msg, "the disk went away");
    ZSH_EXPECT_TRUE(strstr(s.msg, "timeout") == NULL);
}

ZSH_TEST(sticky, a_message_longer_than_the_room_is_cut)
{
    char long_msg[ZSH_ERROR_MSG_MAX];
    zsh_sticky_t s = {0};

    memset(long_msg, 'x', sizeof(long_msg) - 1);
    long_msg[sizeof(long_msg) - 1] = '\0';
    zsh_error(ZSH_ERR_IO, "%s", long_msg);
    zsh_sticky_set(&s, ZSH_ERR_IO);
    ZSH_EXPECT_EQ(ZSH_STICKY_MSG_MAX - 1, strlen(s.msg));
}
