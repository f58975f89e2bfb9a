#include "harness/zsh_test.h"

#include "base/partition.h"
#include "base/tag.h"

ZSH_TEST(partition, blocks_cover_the_vector_exactly_and_differ_by_at_most_one)
{
    static const size_t totals[] = {0, 1, 7, 8, 9, 1000003};
    size_t t, b, nb, off, sum, min, max;

    for (t = 0; t < sizeof(totals) / sizeof(totals[0]); t++) {
        for (nb = 1; nb <= 9; nb++) {
            zsh_part_t p = zsh_part_make(totals[t], nb);

            off = sum = 0;
            min = (size_t)-1;
            max = 0;
            for (b = 0; b < nb; b++) {
                ZSH_EXPECT_EQ(off, zsh_part_offset(&p, b));
                off += zsh_part_count(&p, b);
                sum += zsh_part_count(&p, b);
                min = (zsh_part_count(&p, b) < min) ? zsh_part_count(&p, b) : min;
                max = (zsh_part_count(&p, b) > max) ? zsh_part_count(&p, b) : max;
            }
            ZSH_EXPECT_EQ(totals[t], sum);
            ZSH_EXPECT_TRUE(max - min <= 1);
            ZSH_EXPECT_EQ(max, zsh_part_max(&p));
        }
    }
}

ZSH_TEST(partition, chunks_tile_each_block_and_empty_blocks_still_get_one_chunk)
{
    zsh_part_t p = zsh_part_make(10, 4); /* blocks of 3, 3, 2, 2 */
    size_t off, n, c, covered;

    ZSH_EXPECT_EQ(2, zsh_part_nchunks(&p, 2));
    covered = 0;
    for (c = 0; c < zsh_part_nchunks(&p, 2); c++) {
        n = zsh_part_chunk(&p, 2, c, 2, &off);
        ZSH_EXPECT_EQ(6 + c * 2, off);
        covered += n;
    }
    ZSH_EXPECT_EQ(2, covered);
    /* Block 3 has 2 elements: its second chunk is empty but well defined. */
    ZSH_EXPECT_EQ(0, zsh_part_chunk(&p, 3, 1, 2, &off));
    p = zsh_part_make(0, 3);
    ZSH_EXPECT_EQ(1, zsh_part_nchunks(&p, 64));
    ZSH_EXPECT_EQ(0, zsh_part_chunk(&p, 1, 0, 64, &off));
}

ZSH_TEST(tag, fields_do_not_bleed_into_each_other)
{
    uint64_t a = zsh_tag_make(5, 77, 3, 2);

    ZSH_EXPECT_TRUE(a != zsh_tag_make(6, 77, 3, 2));
    ZSH_EXPECT_TRUE(a != zsh_tag_make(5, 78, 3, 2));
    ZSH_EXPECT_TRUE(a != zsh_tag_make(5, 77, 4, 2));
    ZSH_EXPECT_TRUE(a != zsh_tag_make(5, 77, 3, 3));
    /* Sequence numbers and steps wrap without touching their neighbours. */
    ZSH_EXPECT_EQ(zsh_tag_make(5, 0, 3, 2), zsh_tag_make(5, 1u << ZSH_TAG_SEQ_BITS, 3, 2));
    ZSH_EXPECT_EQ(zsh_tag_make(5, 77, 0, 2), zsh_tag_make(5, 77, ZSH_TAG_STEPS, 2));
    ZSH_EXPECT_EQ((uint64_t)(ZSH_MAX_COMMS - 1) << 52, zsh_tag_make(ZSH_MAX_COMMS - 1, 0, 0, 0));
}
