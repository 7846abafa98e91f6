/* Compile-time stand-in for argparse4j's argument action (see ArgumentParsers.java). */
package net.sourceforge.argparse4j.inf;

public interface ArgumentAction {
}
