/* Compile-time stand-in for argparse4j's action factory (see ArgumentParsers.java). */
package net.sourceforge.argparse4j.impl;

import net.sourceforge.argparse4j.inf.ArgumentAction;

public final class Arguments {
    private Arguments() {
    }

    public static ArgumentAction store() {
        throw new UnsupportedOperationException("argparse4j stand-in: compile-time only");
    }
}
