// SPDX-License-Identifier: MIT
/* libatfplugin.so: a plugin dlopen_user loads on command; plugin_work calls plugin_leaf twice. */
volatile int plugin_sink;

__attribute__((noinline)) void plugin_leaf(int i) { plugin_sink += i; }

__attribute__((noinline)) void plugin_work(int i)
{
	plugin_leaf(i);
	plugin_leaf(-i);
}
