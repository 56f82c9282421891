// epoll and eventfd, which Swift's Glibc module does not bring in: for the event loops outside the
// HTTP edge (the cluster's relay). Headers only; nothing to link.
#ifndef CLINUXEVENTS_SHIM_H
#define CLINUXEVENTS_SHIM_H

#include <sys/epoll.h>
#include <sys/eventfd.h>

#endif
