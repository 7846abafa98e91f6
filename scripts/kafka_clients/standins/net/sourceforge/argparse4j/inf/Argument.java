/* Compile-time stand-in for argparse4j's argument (see ArgumentParsers.java). */
package net.sourceforge.argparse4j.inf;

public interface Argument {
    Argument action(ArgumentAction action);

    Argument required(boolean required);

    Argument metavar(String... metavar);

    Argument help(String help);

    Argument nargs(String nargs);
}
