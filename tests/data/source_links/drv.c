/* Fixture: definitions and the things that look like them. */
#include "drv.h"

#define DRV_MACRO(x) ((x) + 1)
#define DRV_MULTI(a, b) \
    do_something(a,   \
                 b)

static int helper_prototype(int a);
int __init drv_init(void);

// drv_in_comment(void) { return 0; }
static const char *msg = "drv_in_string(void) { }";

static inline int drv_inline(int a) { return a + 1; }

static int
drv_type_above(int a)
{
    return helper_prototype(a) + drv_inline(a);
}

NV_STATUS NV_API_CALL
drv_macros(NvU32 x,
           NvU32 y)
{
    if (x) {
        return drv_type_above(y);
    }
    while (y--)
        drv_call_only(y);
    return 0;
}

int drv_attr(void) __attribute__((noinline)) { return 1; }

EXPORT_SYMBOL(drv_macros);

#if defined(NEW_API)
static int drv_split(int a, int b) {
#else
static int drv_split(int a) {
#endif
    return a;
}

int dup_func(void)
{
    return 1;
}

static int drv_after_split(void)
{
    return 2;
}
