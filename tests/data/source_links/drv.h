#pragma once
/* Header: a static inline and a prototype. */
int drv_init(void);
static inline unsigned long
drv_header_inline(unsigned long v)
{
    return v << 1;
}
struct drv_ops {
    int (*open)(int);
    int (*fake_member_def)(void);
};
