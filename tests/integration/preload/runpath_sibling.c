/* runpath_sibling: the library runpath_loader finds through its RUNPATH (preload_test.sh). */
int sibling_answer(void);

int sibling_answer(void)
{
	return 42;
}
