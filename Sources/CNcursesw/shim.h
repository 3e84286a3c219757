#ifndef PARLEY_CNCURSESW_SHIM_H
#define PARLEY_CNCURSESW_SHIM_H
/* The wide-character API of ncursesw. pkg-config's -D flags are dropped by SwiftPM, so the
   switch that exposes get_wch, waddnwstr and friends is set here, before the header. */
#ifndef NCURSES_WIDECHAR
#define NCURSES_WIDECHAR 1
#endif
#ifndef _XOPEN_SOURCE_EXTENDED
#define _XOPEN_SOURCE_EXTENDED 1
#endif
#include <locale.h>
#include <wchar.h>
#include <ncursesw/curses.h>

/* Globals and macros Swift 6 cannot import (shared mutable state, or function-like macros). */
static inline WINDOW *parley_stdscr(void) { return stdscr; }
static inline int parley_lines(void) { return LINES; }
static inline int parley_cols(void) { return COLS; }

static inline int parley_a_normal(void) { return (int)A_NORMAL; }
static inline int parley_a_bold(void) { return (int)A_BOLD; }
static inline int parley_a_reverse(void) { return (int)A_REVERSE; }
static inline int parley_a_dim(void) { return (int)A_DIM; }
static inline int parley_a_underline(void) { return (int)A_UNDERLINE; }
static inline int parley_color_pair(int n) { return (int)COLOR_PAIR(n); }

/* ACS_* are filled in at run time from the terminal description. */
static inline chtype parley_acs_hline(void) { return ACS_HLINE; }
static inline chtype parley_acs_vline(void) { return ACS_VLINE; }

/* Key codes: KEY_* are plain macros, but wrapping them keeps the Swift side free of guesses. */
static inline int parley_key_resize(void) { return KEY_RESIZE; }
static inline int parley_key_code_yes(void) { return KEY_CODE_YES; }
static inline int parley_key_ok(void) { return OK; }
static inline int parley_key_err(void) { return ERR; }

/* setlocale with LC_ALL, which Swift sees as a macro constant of the wrong type on some libcs. */
static inline void parley_setlocale_from_environment(void) { setlocale(LC_ALL, ""); }

/* Reads one key: returns OK (a character in *wch), KEY_CODE_YES (a function key in *wch) or ERR. */
static inline int parley_get_wch(WINDOW *window, unsigned int *key) {
    wint_t value = 0;
    int result = wget_wch(window, &value);
    *key = (unsigned int)value;
    return result;
}

/* Writes n wide characters (UTF-32 code points) at the cursor. */
static inline int parley_addnwstr(WINDOW *window, const unsigned int *text, int n) {
    return waddnwstr(window, (const wchar_t *)text, n);
}
/* The C library's standard output: the terminal's output stream, because putp and vidattr
   write there whatever stream newterm was given. */
static inline FILE *parley_stdout(void) { return stdout; }

/* The window's cursor: getcury and getcurx are macros. */
static inline int parley_cursor_row(WINDOW *window) { return getcury(window); }
static inline int parley_cursor_column(WINDOW *window) { return getcurx(window); }

/* Writes `utf8` — one grapheme curses cannot hold in a cell (an emoji sequence the terminal joins
   into one glyph) — at row, column with `attributes`, behind curses' back, then puts the
   terminal's cursor at back_row, back_column. Every byte goes through curses' own output (mvcur,
   vidattr and putp), so its idea of the cursor and the attributes stays true; absolute moves,
   because curses cannot know how far the glyph moved the cursor. The caller flushes. */
static inline void parley_write_over(int row, int column, const char *utf8, int attributes, int back_row, int back_column) {
    mvcur(-1, -1, row, column);
    vidattr((chtype)attributes);
    putp(utf8);
    vidattr(A_NORMAL);
    mvcur(-1, -1, back_row, back_column);
}
#endif
