#ifdef __cplusplus
extern "C" {
#endif

int dup_func(void) { return 2; }

int in_extern_c(int x)
{
    return x;
}

#ifdef __cplusplus
}
#endif
